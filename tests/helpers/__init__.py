"""What the tests share and that is not a test: builders of log dirs and segments, the brokers the
broker tests start, readers of the commands' output, and the repository's paths (paths.py).
Test modules import from here, never from one another; fixtures live in the conftest.py files."""
