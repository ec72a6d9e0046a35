"""The memory store (``memory://NAME``): the backend protocol in plain Python, in one
process. See ``backend.py``; the testing modes run on it."""
