// Temporary directories, `eventually` and child processes come with this kit, as they did before they moved to the generic one.
@_exported public import TestSupport
