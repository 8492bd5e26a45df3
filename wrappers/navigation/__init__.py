"""Self-navigating: experience distilled from past episodes, retrieved and injected into prompts."""
