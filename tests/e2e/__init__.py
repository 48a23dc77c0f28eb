"""End-to-end tests against the real agent hosts (see docs/e2e.md)."""
