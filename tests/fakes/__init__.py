"""Fakes for tests: real local servers that stand in for external services (a scripted OpenAI endpoint)."""
