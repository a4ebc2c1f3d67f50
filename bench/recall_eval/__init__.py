"""The recall modes' evaluation (issue 15): generated conversations, questions, and the runner."""
