// The light harnesses come with this kit, so a suite of the gateway imports one testing module: RESP's (Redis,
// Sentinel, loopback servers, temporary directories, `eventually`) and the core's (the manual clock, the log
// recorder, test timing). RESP's suites import RESP's alone.
@_exported public import RESPTesting
@_exported public import TokenGateCoreTesting
