"""Prints a compose environment file with fresh secrets: the URL-signing key, PostgreSQL's
password and the S3 store's two identities. Run once and keep the file (deploy/.env, which git
ignores): a new key invalidates every signed URL, a new password locks the services out of the
database volume made with the old one.
    python3 deploy/make-env.py > deploy/.env"""

import secrets


def main() -> None:
    values = {
        # The volumes and containers are named after it (Compose v1 reads no `name:` key).
        "COMPOSE_PROJECT_NAME": "sfumato",
        "SFUMATO_SECRET_KEY": secrets.token_hex(32),
        "POSTGRES_PASSWORD": secrets.token_hex(16),
        "SFUMATO_S3_ACCESS_KEY": "sfumato-" + secrets.token_hex(6),
        "SFUMATO_S3_SECRET_KEY": secrets.token_hex(24),
        "SFUMATO_S3_ADMIN_ACCESS_KEY": "admin-" + secrets.token_hex(6),
        "SFUMATO_S3_ADMIN_SECRET_KEY": secrets.token_hex(24),
    }
    print("\n".join(f"{name}={value}" for name, value in values.items()))


if __name__ == "__main__":
    main()
