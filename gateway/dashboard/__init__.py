"""The dashboard at /dashboard: server-rendered pages over the same core services as the API and
the CLI (keys, jobs, creation, styles, uploads, credits, accounts). Signed in by email and
password into a server-side session; never in the OpenAPI document."""
