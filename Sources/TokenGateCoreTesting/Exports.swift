// The generic kit comes with the core's, so a suite of the core imports one testing module.
@_exported public import TestSupport
