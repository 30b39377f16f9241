"""Reading text: words, sentences, dates, the signal scan, normalized hashes and embeddings."""
