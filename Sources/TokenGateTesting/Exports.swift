// The light harness (Redis, Sentinel, loopback servers, temporary directories, `eventually`) comes with this kit,
// so a suite of the gateway imports one testing module; RESP's own suites import the light one alone.
@_exported public import RESPTesting
