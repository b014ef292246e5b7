"""Where the tests find the repository, its samples and the test data, from any layer of the suite."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SAMPLES = ROOT / "sample_jobs"
DATA = TESTS / "data"
FAKES = TESTS / "fakes"
