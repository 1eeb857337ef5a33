# Generated from sfumato_client/_async/__init__.py by clients/python/generate_sync.py
# (`make client-sync`): change that file, not this one.
