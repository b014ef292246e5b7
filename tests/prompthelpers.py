"""A scripted prompter for login tests: answers a backend's questions (a passphrase, a one-time
code) from a list, recording each question."""

from __future__ import annotations

import asyncio


class Prompts:
    """A prompter that answers from ``answers`` (a callable per question, or text), recording each question."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.questions: list[tuple[str, bool]] = []

    async def __call__(self, question: str, secret: bool) -> str | None:
        self.questions.append((question, secret))
        answer = self.answers.pop(0) if self.answers else None
        if asyncio.iscoroutinefunction(answer):
            return await answer()
        if callable(answer):
            return await asyncio.to_thread(answer)  # otp_code may wait for a fresh step
        return answer
