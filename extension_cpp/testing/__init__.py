"""extension_cpp.testing: the conformance harness, under this package's name.

The harness is a distribution of its own, extension-cpp-testing (import name
``extension_cpp_testing``), pure Python and installable next to any torch it
supports. extension_cpp requires it, and this module re-exports it, so that
``from extension_cpp.testing import OpSpec`` and ``-p extension_cpp.testing.pytest_plugin``
work wherever extension_cpp is installed. New code can import
``extension_cpp_testing`` itself.
"""

from extension_cpp_testing import *  # noqa: F403
from extension_cpp_testing import __all__, autodiff, checks, layouts, spec  # noqa: F401
