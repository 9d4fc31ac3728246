"""Tests of minigluon.launcher; a package so its test_local.py and tests/kvstore's coexist."""
