"""Updates: a later statement that changes what an earlier one said about the same subject.

"Sam lives in Berlin" and, a week later, "we moved to Munich" are not a duplicate and not a
contradiction of words: the second *updates* the first, which stops being true. This package
reads, from the words of a statement, the **claims** it makes about its holder and decides
whether a newer statement's claims replace an older one's. The rules, each explainable:

* **A value changed.** Both make a claim about the same *slot* of one holder -- where they
  live, where they work, their role, their relationship, their diet, how many of one kind of
  thing they have, one thing of theirs and what it is ("my main browser is Firefox") -- with
  different values: "lives in Berlin" → "moved to Munich"; "two kids" → "a third kid";
  "single" → "engaged"; "my rent is 900" → "my rent is 1100 now". A slot can change with
  its value unsaid: "new job!", "got promoted", "we moved house", "I retired".
* **It ended.** The newer statement ends something ("left", "quit", "sold", "scrapped",
  "turned down", "declined", "came off", "ripped … out", "traded … in", "no longer", "done
  with it"), what was taken on too ("signed up for …" → "dropped out of …"), or says it
  ended ("the Volvo died", "the account is closed", "the knee has healed", "the contract
  ended", "the Kindle is in a drawer") and what it ends is what the older statement was about.
* **It was done.** The older statement is a plan, a to-do ("I need to call the bank") or work
  under way ("I'm building a canoe"), and the newer one says that work was done or called off
  ("finally called the bank", "FINISHED!! the canoe is in the water"): the plan's own verb
  done, or a done-word, to the same thing -- not merely a shared verb.
* **It changed, in general words.** The newer statement says a change ("… now", "not …
  anymore", "switched", "these days", "instead", "went back to", "moved Mia to …") in a
  clause that names what the older statement was about -- a shared word, the same verb said
  of the holder ("I drive a Volvo" → "I drive a Kona now"), a value of the same kind
  ("window seat" → "aisle"; "early swims" → "a night swimmer now"; renting → "we own our
  place now"), or someone close to the holder ("my daughter Mia is at Elm" → "we moved Mia
  to Oak"). A change that would replace many statements at once is about a whole topic of
  the holder's, not any one of them, and replaces none (:class:`ClaimBook`).
* **It turned around.** The newer statement likes what the older one disliked, or the
  reverse ("I hate tea" → "tea has grown on me"), or changes a decision in so many
  words ("change of plans", "scratch that", "after all", "went with green in the end").
* **Life moved on.** A birth ends a pregnancy, graduating ends studies, a job found ends a
  job search and being out of work, feeling well again ends an illness, papers granted end a
  wait for them, and what a plan would get arriving carries the plan out.

What keeps a look-alike from counting (a wrong update hides a true memory, so the rules lean
to saying nothing): a different holder ("my sister moved to Munich", "a friend got a job at
…", another speaker); a clause that only wonders, asks or intends ("if we moved…", "should
I…", "I'd give it up", "planning to move…": a plan is a claim of its own, never a change of
state); one that adds ("I like tea too", "a second laptop"); one set in the past ("back
when I lived in Rome", "had an interview yesterday"); the same value again ("still in
Berlin", "five years vegan now"); a change of a part or a place of the thing, not of the
holder ("my Pixel's battery is dying now", "my phone is on 5% now"); whom a message is said
to ("Thanks, Mel!"); and two events -- "swam a mile", then "swam two miles" -- which claim nothing
about a slot.

Everything here is words and rules, no model: deterministic and cheap enough to run on every
fact written (the :class:`ClaimBook` finds earlier statements by holder in a dictionary).
With an LLM configured, consolidation's judge decides the pairs these rules leave alone.
Measured by ``python -m bench.updates_bench`` (held-out pairs, and supersedes in real
conversations with ``--locomo``).

The rules are in modules that each build only on those listed before them:

* :mod:`.words` -- stems, what a piece of text is about (:func:`salient`), numbers, the words
  too general to tie two statements together.
* :mod:`.clauses` -- clauses and sentences, whose statement a clause is, and the guards
  (wondering, intent, the past, adding, someone else, asides and captions).
* :mod:`.slots` -- the :class:`Claim` and the slots of how a life stands: residence,
  employer, role, relationship, diet, counts.
* :mod:`.attributes` -- one thing of the holder's and its value ("my browser is Firefox").
* :mod:`.endings` -- what ended, was done, was put right or found; life moving on.
* :mod:`.changes` -- a change said in general words, a decision or a liking turned around, a
  change of someone close to the holder, and every change a clause says.
* :mod:`.updates` -- a statement's claims (:func:`claims`), the decision between two
  statements (:func:`update_between`) and the :class:`ClaimBook`.

A name with a leading underscore is the package's own: its modules share it, nothing outside
uses it.
"""

from .clauses import without_asides
from .slots import FEWER, SOME, Claim
from .updates import (
    DONE_TAG,
    MAX_LOOSE,
    ClaimBook,
    carried_out,
    claims,
    claims_of,
    default_holder,
    fact_claims,
    states_something,
    tells_event,
    update_between,
    update_reason,
)
from .words import salient

__all__ = [
    "DONE_TAG",
    "FEWER",
    "MAX_LOOSE",
    "SOME",
    "Claim",
    "ClaimBook",
    "carried_out",
    "claims",
    "claims_of",
    "default_holder",
    "fact_claims",
    "salient",
    "states_something",
    "tells_event",
    "update_between",
    "update_reason",
    "without_asides",
]
