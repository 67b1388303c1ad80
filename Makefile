# The two commands of the README. Each creates or reuses .venv and installs what it needs.
.PHONY: demo test test-slow test-gpu lint bench

demo:
	@scripts/bootstrap.sh
	.venv/bin/triton-s2r demo

# Default tier: lint, type check, fast CPU tests (slow and GPU tiers are opt-in below).
test:
	@scripts/bootstrap.sh
	.venv/bin/ruff check .
	.venv/bin/basedpyright -p .  # this checkout's pyproject.toml, not a config in a parent folder
	.venv/bin/python -m pytest -m "not slow and not gpu"

test-slow:
	@scripts/bootstrap.sh
	.venv/bin/python -m pytest -m slow

test-gpu:
	@scripts/bootstrap.sh
	.venv/bin/python -m pytest -m gpu

lint:
	@scripts/bootstrap.sh
	.venv/bin/ruff check .
	.venv/bin/basedpyright -p .  # this checkout's pyproject.toml, not a config in a parent folder

bench:
	@scripts/bootstrap.sh
	.venv/bin/python -m benchmarks.render
