# Convenience wrappers around the two README commands.
.PHONY: demo test bench
demo:
	python3 scripts/demo.py
test:
	python3 scripts/test.py
bench:
	.venv/bin/python benchmarks/calibration.py
