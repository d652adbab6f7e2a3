"""The harness's pytest plugin under this package's name: ``-p`` naming
this module loads extension_cpp_testing.pytest_plugin (once, however many
names ask for it)."""

pytest_plugins = ["extension_cpp_testing.pytest_plugin"]
