"""The adversarial campaign: mutated copies of real log dirs fed to every command, kill -9 of
every mutating command, and the promises (docs/safety.md) checked as an oracle (see README.md here)."""
