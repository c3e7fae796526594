"""Text the from-scratch models learn from: a synthetic English->German corpus made by a
small grammar (german.py), a user's own tab-separated pairs (pairs_file.py), Shakespeare's
plays for the GPT (shakespeare.py), and a user's own text (english_text.py)."""
