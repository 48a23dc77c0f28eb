"""What many test files share: builders, servers, venvs, a scripted model."""
