"""Our three ops through extension_cpp.testing, the harness users run on theirs.

Every check an op needs, generated from cases.SPECS over device x dtype x
layout: results and output layout against the reference, fake = real,
opcheck, gradcheck and gradgradcheck, every autodiff mode, torch.compile
(fullgraph, dynamic shapes, no recompiles), torch.export, CUDA graphs and a
side stream, and bad input. The suite and the tool cannot drift apart: this
file is the suite's copy of those checks. What is specific to our ops (exact
error words, out= layouts, kernel paths, ...) stays in the other modules.
"""

from .cases import SPECS, testing

test_mymuladd = testing.conformance_tests(SPECS["mymuladd"])
test_mymul = testing.conformance_tests(SPECS["mymul"])
test_myadd_out = testing.conformance_tests(SPECS["myadd_out"])
