# -*- Python -*-
# Runtime unit tests: every GoogleTest case of build/unittests/*-tests is one
# lit test, so the suite's pass/fail counts include each unit test.

import os

import lit.formats

config.name = "STRATA-Unit"
config.suffixes = []
config.test_exec_root = os.path.join(config.strata_obj_root, "unittests")
config.test_source_root = config.test_exec_root
config.test_format = lit.formats.GoogleTest(".", "-tests")
