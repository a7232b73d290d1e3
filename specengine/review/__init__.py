"""Human reviews of verdicts, and how often a judge agrees with people.

Plain Python (no web stack, no index): a person says a case's or a check's verdict is correct or
incorrect, and the review is appended to `.specengine/reviews.jsonl`, one JSON line each, never to a
results file. A review is tied to what the person read (the case's transcripts, by fingerprint), so it
follows that reply into a regraded, merged or resumed run and never onto a different reply. Scripts
read the store with `ReviewStore(project_folder).reviews()`.
"""

from specengine.review.store import Review, ReviewStore, reviewer_name
from specengine.review.verdicts import ReviewedVerdict, human_passed

__all__ = ["Review", "ReviewStore", "ReviewedVerdict", "human_passed", "reviewer_name"]
