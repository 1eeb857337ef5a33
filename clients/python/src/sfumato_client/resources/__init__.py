"""The API resources, each in its sync and async form."""
