"""Helpers shared by the tests (graphrag_assets_tests) and the benchmarks (bench): the scripted
OpenAI-compatible server, sample projects, index runs, fault injection; the product never imports it."""
