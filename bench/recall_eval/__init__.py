"""The recall modes' evaluation: generated conversations, questions, and the runner."""
