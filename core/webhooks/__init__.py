"""Webhooks: job events sent to the URLs their owners named, signed the Standard Webhooks way,
never lost (an outbox written with the change, a deliverer that retries)."""
