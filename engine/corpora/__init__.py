"""Text the from-scratch models learn from: a synthetic English->German corpus made by a
small grammar (german.py), a user's own tab-separated pairs (pairs_file.py), and English
prose for the GPT that is on every machine with Python (english_text.py)."""
