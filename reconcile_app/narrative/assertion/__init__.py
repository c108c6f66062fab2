"""Assertion and subject of clinical targets in chat through medspaCy's ConText, with conversation rules as data."""
from .medspacy_context import (
    Assertion, MedspacyContext, SentenceContext, SpeakerFrame, assert_targets, default_context, speaker_frame,
)

__all__ = ["Assertion", "MedspacyContext", "SentenceContext", "SpeakerFrame", "assert_targets", "default_context", "speaker_frame"]
