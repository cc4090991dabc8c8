"""Step 2's one interface: send a document, get the answer verbatim, then validate it.

Two implementations: the OpenAI one (when OPENAI_API_KEY or OPENAI_BASE_URL is set) and the
offline parser (the default). Calling and validating are separate so the exact answer is recorded
in `model_calls` even when it fails the schema.
"""
