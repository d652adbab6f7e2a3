"""The harness's pytest plugin (extension_cpp_testing.pytest_plugin), under
this package's name: load one of the two, not both."""

from extension_cpp_testing.pytest_plugin import (  # noqa: F401
    pytest_configure,
    pytest_runtest_makereport,
    pytest_terminal_summary,
)
