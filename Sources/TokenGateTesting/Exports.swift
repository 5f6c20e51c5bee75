// The light harnesses come with this kit, so a suite of the gateway imports one testing module: RESP's (Redis,
// Sentinel, loopback servers) and the core's (the manual clock, the log recorder, test timing), each with the
// generic one (temporary directories, `eventually`, child processes). RESP's and the core's suites import their own.
@_exported public import RESPTesting
@_exported public import TokenGateCoreTesting
