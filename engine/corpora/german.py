"""A synthetic English->German parallel corpus, made by a small grammar, deterministic by seed.

Why synthetic: no parallel corpus can be fetched offline, and a grammar we control makes
the attention worth looking at. Every construction forces an alignment a head must learn:

- articles and stacked adjectives declined for gender, number and case ("the big old dog" is
  "der große alte hund", "den großen alten hund" or "dem großen alten hund" by its role;
  "a small cat" after "mit" is "einer kleinen katze"), with weak, mixed and strong endings;
  English adjective order (opinion, size, quality, age, colour) kept in German;
- verbs conjugated for person and number (ich schlafe, du schläfst, er schläft ...);
- verb-second main clauses, also after a fronted time adverb or "wenn" clause
  ("today the dog sleeps" -> "heute schläft der hund");
- verb-final subordinate clauses after weil / dass / wenn, chained up to four clauses, and
  main clauses joined by ", und" / ", aber";
- relative clauses (der / die / das / denen ... with the verb last), agreeing in gender and
  number with their noun and in case with their role: "the man who sees the dog" -> "der
  mann , der den hund sieht", "the book that the man reads" -> "das buch , das der mann liest";
- chains of prepositional phrases (mit / in / zu + dative, für / ohne + accusative);
- separable verbs ("the man calls the woman" -> "der mann ruft die frau an") and modal
  verbs ("can sleep" -> "kann ... schlafen") that send a word to the end of the clause;
- negation with "nicht" (definite objects) and "kein" (indefinite ones);
- yes/no questions with the verb first; datives after mit / zu / in and with helfen, geben.

The splits (``make_splits``) hold out *constructions and lengths*, not only words: a sentence
with any of these goes to the test split only, labelled by the first that applies:

- ``adjectives x3 in a pp``: three stacked adjectives inside a prepositional phrase (training
  has three-adjective stacks elsewhere and two-adjective stacks in prepositional phrases);
- ``relative clause in a subordinate clause`` (training has them in main clauses only);
- ``clause nesting``: a "that" clause followed by a "because" clause, or a "because" clause
  followed by an "if" clause (training has every other order of connectives);
- ``held-out length``: 22, 25 or 28 English words (training has every other length to 30);
- ``held-out word pair``: an (adjective, noun) or (subject noun, verb) pair from a random
  twentieth of them.

Train and valid are drawn from the same distribution; no English sentence is in two splits.

Output is lower case with punctuation as separate tokens: "der große hund schläft ."
"""
from __future__ import annotations

import random
from dataclasses import dataclass, replace
from pathlib import Path

from attnscope.engine.resources import resource
from attnscope.engine.corpora.german_lexicon import (ADJECTIVES, BE, FREQUENCY_ADVERBS, MODALS, NAMES, NOUNS, PRONOUNS,
                                           SAY_VERBS, TIME_ADVERBS, VERBS, Adjective, Noun, Verb)

# ---- German declension ----------------------------------------------------------------
_DEF = {"nom": dict(m="der", f="die", n="das", pl="die"),
        "acc": dict(m="den", f="die", n="das", pl="die"),
        "dat": dict(m="dem", f="der", n="dem", pl="den")}
_EIN_ENDING = {"nom": dict(m="", f="e", n="", pl="e"),
               "acc": dict(m="en", f="e", n="", pl="e"),
               "dat": dict(m="em", f="er", n="em", pl="en")}
_WEAK = {"nom": dict(m="e", f="e", n="e", pl="en"),      # after der/die/das
         "acc": dict(m="en", f="e", n="e", pl="en"),
         "dat": dict(m="en", f="en", n="en", pl="en")}
_MIXED = {"nom": dict(m="er", f="e", n="es", pl="en"),   # after ein/kein/mein
          "acc": dict(m="en", f="e", n="es", pl="en"),
          "dat": dict(m="en", f="en", n="en", pl="en")}
_STRONG_PLURAL = {"nom": "e", "acc": "e", "dat": "en"}  # no article: "große hunde", "mit großen hunden"
_CONTRACTIONS = {("in", "dem"): "im", ("zu", "dem"): "zum", ("zu", "der"): "zur"}


_RELATIVE = {"nom": dict(m="der", f="die", n="das", pl="die"),
             "acc": dict(m="den", f="die", n="das", pl="die"),
             "dat": dict(m="dem", f="der", n="dem", pl="denen")}
# English adjective order: opinion, size, quality, age, colour (German keeps it).
_ADJECTIVE_RANK = {**dict.fromkeys(["beautiful", "good", "funny", "clever", "friendly", "happy", "expensive", "cheap"], 0),
                   **dict.fromkeys(["big", "small"], 1),
                   **dict.fromkeys(["heavy", "tired", "hungry", "rich", "poor", "fresh", "sweet"], 2),
                   **dict.fromkeys(["old", "new", "young"], 3),
                   **dict.fromkeys(["red", "green", "blue", "black", "white"], 4)}


def _join(words) -> str:
    return " ".join(w for w in words if w)


def tidy(german: str) -> str:
    """The comma that closes a relative clause merges with a comma or end mark after it."""
    out: list[str] = []
    for w in german.split():
        if w in (",", ".", "?") and out and out[-1] == ",":
            out[-1] = w
        else:
            out.append(w)
    return " ".join(out)


@dataclass(frozen=True)
class NounPhrase:
    """A noun with determiner ("def", "ein", "mein" or "none" for a bare plural), stacked
    adjectives and an optional relative clause, or a name. Rendered per case; ``negated``
    turns ein/none into kein."""

    noun: Noun | None = None
    det: str = "def"
    adjs: tuple[Adjective, ...] = ()
    plural: bool = False
    name: str | None = None
    rel: "Relative | None" = None

    @property
    def person(self) -> int:
        return 5 if self.plural else 2

    @property
    def indefinite(self) -> bool:
        return self.name is None and self.det in ("ein", "none")

    @property
    def gender(self) -> str:
        return "pl" if self.plural else self.noun.gender

    def en(self) -> str:
        if self.name:
            return self.name
        words = [a.en for a in self.adjs] + [self.noun.en_pl if self.plural else self.noun.en]
        if self.det == "def":
            words.insert(0, "the")
        elif self.det == "mein":
            words.insert(0, "my")
        elif self.det == "ein":
            words.insert(0, "an" if words[0][0] in "aeiou" else "a")
        return _join(words + [self.rel.en() if self.rel else ""])

    def de(self, case: str = "nom", negated: bool = False) -> str:
        if self.name:
            return self.name
        g = self.gender
        det = "kein" if negated and self.indefinite else self.det
        words = []
        if det == "def":
            words.append(_DEF[case][g])
            ending = _WEAK[case][g]
        elif det in ("ein", "kein", "mein"):
            words.append(det + _EIN_ENDING[case][g])
            ending = _MIXED[case][g]
        else:
            ending = _STRONG_PLURAL[case]
        words += [a.stem + ending for a in self.adjs]
        if self.plural:
            words.append(self.noun.de_pl_dat if case == "dat" else self.noun.de_pl)
        else:
            words.append(self.noun.de)
        if self.rel:
            words += [",", self.rel.de(g), ","]
        return " ".join(words)

    def de_after(self, preposition: str, case: str = "dat") -> str:
        """The phrase after a preposition, contracted where German must (in dem -> im)."""
        first, _, rest = self.de(case).partition(" ")
        short = _CONTRACTIONS.get((preposition, first))
        return f"{short} {rest}" if short else f"{preposition} {first} {rest}".strip()


@dataclass(frozen=True)
class Pronoun:
    en_word: str
    de_word: str
    person: int
    indefinite = False

    def en(self) -> str:
        return self.en_word

    def de(self, case: str = "nom", negated: bool = False) -> str:
        return self.de_word


@dataclass(frozen=True)
class Gap:
    """Where the relative pronoun stands in its clause: it renders as nothing there."""

    person: int
    indefinite = False

    def en(self) -> str:
        return ""

    def de(self, case: str = "nom", negated: bool = False) -> str:
        return ""


@dataclass(frozen=True)
class Relative:
    """A relative clause: ``role`` is the case of the pronoun (nom: it is the subject; acc,
    dat: an object), ``clause`` has a Gap there, ``word`` is the English who/whom/that/which."""

    role: str
    clause: "Clause"
    word: str

    def en(self) -> str:
        return _join([self.word, self.clause.en()])

    def de(self, gender: str) -> str:
        return self.clause.de_subordinate(_RELATIVE[self.role][gender])


@dataclass(frozen=True)
class PrepPhrase:
    """("with", "mit", "dat", the noun phrase): a preposition with the case it governs."""

    en_prep: str
    de_prep: str
    case: str
    phrase: NounPhrase

    def en(self) -> str:
        return f"{self.en_prep} {self.phrase.en()}"

    def de(self) -> str:
        return self.phrase.de_after(self.de_prep, self.case)


# English preposition -> (German, case, noun classes it takes, needs a verb of motion)
PREPOSITIONS = {"with": ("mit", "dat", {"animate", "person"}, False), "in": ("in", "dat", {"place"}, False),
                "to": ("zu", "dat", {"place"}, True), "for": ("für", "acc", {"animate", "person"}, False),
                "without": ("ohne", "acc", {"animate", "person"}, False)}


@dataclass(frozen=True)
class Clause:
    """One clause, rendered as an English clause and as a German main, question or
    subordinate clause. ``verb`` None means the copula with ``predicate``."""

    subject: NounPhrase | Pronoun | Gap
    verb: Verb | None
    predicate: Adjective | None = None
    modal: str | None = None
    dat: NounPhrase | Gap | None = None
    acc: NounPhrase | Gap | None = None
    pps: tuple[PrepPhrase, ...] = ()
    negated: bool = False
    frequency: tuple[str, str] | None = None

    # ---- English -------------------------------------------------------------------
    def _en_rest(self) -> list[str]:
        words = [self.dat.en()] if self.dat else []
        words += [self.acc.en()] if self.acc else []
        return words + [pp.en() for pp in self.pps]

    def en(self) -> str:
        p, s = self.subject.person, self.subject.en()
        if self.verb is None:
            return _join([s, BE[0][p]] + (["not"] if self.negated else []) + [self.predicate.en])
        if self.modal:
            forms, _, neg = MODALS[self.modal]
            if self.negated:
                head = [neg] if neg else ["does" if p == 2 else "do", "not", forms[0]]
            else:
                head = [forms[p]]
            return _join([s] + head + [self.verb.en] + self._en_rest())
        if self.negated:
            head = ["does" if p == 2 else "do", "not", self.verb.en]
        else:
            head = [self.verb.en_3sg if p == 2 else self.verb.en]
        freq = [self.frequency[0]] if self.frequency else []
        return _join([s] + freq + head + self._en_rest())

    def en_question(self) -> str:
        p, s = self.subject.person, self.subject.en()
        if self.verb is None:
            return " ".join([BE[0][p], s, self.predicate.en, "?"])
        if self.modal == "can":
            return " ".join(["can", s, self.verb.en] + self._en_rest() + ["?"])
        aux = "does" if p == 2 else "do"
        verb = ["want to", self.verb.en] if self.modal == "want" else [self.verb.en]
        return " ".join([aux, s] + verb + self._en_rest() + ["?"])

    # ---- German --------------------------------------------------------------------
    def _de_finite(self) -> str:
        p = self.subject.person
        if self.verb is None:
            return BE[1][p]
        if self.modal:
            return MODALS[self.modal][1][p]
        return self.verb.de[p]

    def _kein(self) -> str | None:
        """Which object carries a negation as kein ("acc" or "dat"), if one does."""
        if not self.negated:
            return None
        if self.acc is not None:
            return "acc" if self.acc.indefinite else None
        return "dat" if self.dat is not None and self.dat.indefinite else None

    def _de_middle(self) -> list[str]:
        """The middle field: frequency adverb, objects, nicht, prepositional phrases, predicate."""
        words = [self.frequency[1]] if self.frequency else []
        kein = self._kein()
        if self.dat:
            words.append(self.dat.de("dat", kein == "dat"))
        if self.acc:
            words.append(self.acc.de("acc", kein == "acc"))
        if self.negated and kein is None:
            words.append("nicht")
        words += [pp.de() for pp in self.pps]
        if self.predicate:
            words.append(self.predicate.de)
        return words

    def _de_final(self) -> list[str]:
        """What a main clause sends to its end: the infinitive after a modal, or the particle."""
        if self.verb is None:
            return []
        if self.modal:
            return [self.verb.de_inf]
        return [self.verb.particle] if self.verb.particle else []

    def de_main(self, front: str | None = None) -> str:
        """Verb second: subject first, or ``front`` first and the subject after the verb."""
        lead = [self.subject.de(), self._de_finite()] if front is None else [front, self._de_finite(), self.subject.de()]
        return _join(lead + self._de_middle() + self._de_final())

    def de_question(self) -> str:
        return _join([self._de_finite(), self.subject.de()] + self._de_middle() + self._de_final() + ["?"])

    def de_subordinate(self, conjunction: str) -> str:
        """Verb last: "weil der mann die frau anruft", "dass der hund schlafen kann"."""
        if self.verb is not None and not self.modal and self.verb.particle:
            end = [self.verb.particle + self._de_finite()]
        else:
            end = self._de_final() + [self._de_finite()]
        return _join([conjunction, self.subject.de()] + self._de_middle() + end)

    def last_slot(self) -> str | int | None:
        """The noun phrase a German main clause ends on ("acc", "dat" or the index of a
        prepositional phrase), where a relative clause can follow it; None if another
        word (nicht, a particle, an infinitive, a predicate) comes last."""
        if self._de_final() or self.predicate:
            return None
        if self.pps:
            return len(self.pps) - 1
        if self.negated and self._kein() is None:
            return None
        return "acc" if self.acc is not None else ("dat" if self.dat is not None else None)

    # ---- what the held-out rules look at ---------------------------------------------
    def noun_phrases(self) -> list[NounPhrase]:
        """Every noun phrase in the clause, those in its relative clauses included."""
        out = []
        for np_ in (self.subject, self.dat, self.acc, *(pp.phrase for pp in self.pps)):
            if isinstance(np_, NounPhrase):
                out.append(np_)
                if np_.rel is not None:
                    out += np_.rel.clause.noun_phrases()
        return out

    def pairs(self) -> set[tuple[str, str]]:
        """(adjective, noun) and (subject noun, verb) pairs this clause uses."""
        out = {(a.en, np_.noun.en) for np_ in self.noun_phrases() if np_.noun is not None for a in np_.adjs}
        if isinstance(self.subject, NounPhrase) and self.subject.noun is not None:
            out.add((self.subject.noun.en, "be" if self.verb is None else self.verb.de_inf))
        return out

    def stacks_in_pps(self) -> int:
        """The most adjectives on one noun inside a prepositional phrase."""
        most = max((len(pp.phrase.adjs) for pp in self.pps), default=0)
        for np_ in self.noun_phrases():
            if np_.rel is not None:
                most = max(most, np_.rel.clause.stacks_in_pps())
        return most


@dataclass
class Sentence:
    en: str
    de: str
    pairs: set
    connectives: list        # "because", "if", "that", "and", "but" in order
    pp_stack: int = 0        # the most adjectives on a noun inside a prepositional phrase
    relative_in_subordinate: bool = False


# ---- random generation ----------------------------------------------------------------
class _Grammar:
    def __init__(self, rng: random.Random):
        self.rng = rng

    def adjectives(self, noun: Noun) -> tuple[Adjective, ...]:
        """0 to 3 adjectives that fit the noun, one per rank, in English order."""
        rng = self.rng
        n = rng.choices([0, 1, 2, 3], weights=[50, 28, 14, 8])[0]
        by_rank: dict[int, list[Adjective]] = {}
        for a in ADJECTIVES:
            if a.kinds & noun.kinds:
                by_rank.setdefault(_ADJECTIVE_RANK[a.en], []).append(a)
        ranks = sorted(rng.sample(sorted(by_rank), min(n, len(by_rank))))
        return tuple(rng.choice(by_rank[r]) for r in ranks)

    def noun_phrase(self, kinds: frozenset | set, allow_name: bool = True, det: str | None = None) -> NounPhrase:
        rng = self.rng
        if allow_name and "person" in kinds and rng.random() < 0.2:
            return NounPhrase(name=rng.choice(NAMES))
        noun = rng.choice([n for n in NOUNS if n.kinds & kinds])
        plural = det is None and rng.random() < 0.25
        if det is None:
            det = rng.choice(["def", "def", "ein", "mein"] if not plural else ["def", "def", "none", "mein"])
        return NounPhrase(noun, det, self.adjectives(noun), plural)

    def subject(self, kinds: frozenset = frozenset({"animate", "person"})):
        if self.rng.random() < 0.25:
            return Pronoun(*self.rng.choice(PRONOUNS))
        return self.noun_phrase(kinds)

    def prepositional_phrases(self, verb: Verb) -> tuple[PrepPhrase, ...]:
        """One to three prepositional phrases of different prepositions."""
        rng = self.rng
        names = [p for p, (_, _, _, motion) in PREPOSITIONS.items() if verb.motion or not motion]
        chosen = rng.sample(names, rng.choices([1, 2, 3], weights=[60, 28, 12])[0])
        if "in" in chosen and "to" in chosen:
            chosen.remove("to")
        out = []
        for name in chosen:
            de, case, kinds, _ = PREPOSITIONS[name]
            place = "place" in kinds
            out.append(PrepPhrase(name, de, case, self.noun_phrase(kinds, allow_name=not place,
                                                                   det="def" if place else None)))
        return tuple(out)

    def relative(self, antecedent: NounPhrase) -> Relative:
        """A relative clause for ``antecedent``: its subject, accusative or dative object."""
        rng = self.rng
        kinds = antecedent.noun.kinds
        animate = bool(kinds & {"animate", "person"})
        acc_verbs = [v for v in VERBS if v.frame in ("acc", "ditr") and v.obj & kinds]
        roles = (["nom"] * 3 + ["dat"] if animate else []) + (["acc"] * 2 if acc_verbs else [])
        role = rng.choice(roles)
        gap = Gap(antecedent.person)
        person = "person" in kinds
        if role == "nom":
            return Relative(role, self.clause(subject=gap, relatives=False, pps=False),
                            rng.choice(["who", "that"] if person else ["that", "which"]))
        word = rng.choice(["whom", "who", "that"] if person else ["that", "which"])
        if role == "acc":
            return Relative(role, self.clause(verb=rng.choice(acc_verbs), acc=gap, relatives=False, pps=False), word)
        verb = rng.choice([v for v in VERBS if v.frame == "dat"])
        return Relative(role, self.clause(verb=verb, dat=gap, relatives=False, pps=False), word)

    def _with_relative(self, c: Clause, slot) -> Clause:
        if slot == "subject":
            return replace(c, subject=replace(c.subject, rel=self.relative(c.subject)))
        if slot in ("acc", "dat"):
            np_ = getattr(c, slot)
            return replace(c, **{slot: replace(np_, rel=self.relative(np_))})
        pps = list(c.pps)
        pps[slot] = replace(pps[slot], phrase=replace(pps[slot].phrase, rel=self.relative(pps[slot].phrase)))
        return replace(c, pps=tuple(pps))

    def clause(self, allow_frequency: bool = True, subject=None, verb: Verb | None = None, acc=None, dat=None,
               relatives: bool = True, last_relative: bool = True, pps: bool = True) -> Clause:
        """A random clause; ``subject`` / ``verb`` / ``acc`` / ``dat`` fix parts of it (a
        relative clause's Gap). ``relatives``: a relative clause may follow the subject;
        ``last_relative``: or the noun phrase the (main) clause ends on."""
        rng = self.rng
        subject = subject or self.subject()
        negated = rng.random() < 0.2
        if verb is None and acc is None and dat is None and rng.random() < 0.1:
            noun_kinds = subject.noun.kinds if isinstance(subject, NounPhrase) and subject.noun else {"person", "animate"}
            predicate = rng.choice([a for a in ADJECTIVES if a.kinds & noun_kinds])
            c = Clause(subject, None, predicate=predicate, negated=negated)
        else:
            verb = verb or rng.choice(VERBS)
            modal = rng.choice(["can", "want", "must"]) if rng.random() < 0.2 else None
            if modal == "must" and negated:
                modal = "can"
            if verb.frame in ("dat", "ditr") and dat is None:
                dat = self.noun_phrase({"animate", "person"})
            if verb.frame in ("acc", "ditr") and acc is None:
                acc = self.noun_phrase(verb.obj)
            chain = ()
            if pps and not verb.particle and verb.frame in ("intr", "acc") and rng.random() < 0.35:
                chain = self.prepositional_phrases(verb)
            frequency = None
            if allow_frequency and not negated and not modal and verb.frame != "ditr" and rng.random() < 0.15:
                frequency = rng.choice(FREQUENCY_ADVERBS)
            c = Clause(subject, verb, modal=modal, dat=dat, acc=acc, pps=chain, negated=negated, frequency=frequency)
        if relatives and isinstance(c.subject, NounPhrase) and c.subject.noun is not None and rng.random() < 0.15:
            c = self._with_relative(c, "subject")
        slot = c.last_slot() if relatives and last_relative else None
        if slot is not None and rng.random() < 0.2:
            target = getattr(c, slot) if isinstance(slot, str) else c.pps[slot].phrase
            if isinstance(target, NounPhrase) and target.noun is not None and target.rel is None:
                c = self._with_relative(c, slot)
        return c

    def say_clause(self) -> Clause:
        return Clause(self.subject(frozenset({"person"})), self.rng.choice(SAY_VERBS))

    def sentence(self) -> Sentence:
        """One sentence of one to four clauses by a randomly chosen construction."""
        rng = self.rng
        n = rng.choices([1, 2, 3, 4], weights=[30, 35, 23, 12])[0]
        first = rng.choices(["plain", "time", "question", "if_first"], weights=[55, 15, 15, 15])[0]
        if first == "question" and n == 1:
            c = self.clause(allow_frequency=False, relatives=False)
            if c.modal == "must" or c.negated:
                c = replace(c, modal=None, negated=False)
            return Sentence(c.en_question(), c.de_question(), c.pairs(), [], c.stacks_in_pps())
        clauses: list[Clause] = []
        connectives: list[str] = []
        en: list[str] = []
        de: list[str] = []
        rel_in_sub = False

        def new_clause(subordinate: bool) -> Clause:
            nonlocal rel_in_sub
            more = len(clauses) + 1 < n
            if more and rng.random() < 0.25:
                c = self.say_clause()
            else:
                c = self.clause(last_relative=not subordinate)
                if subordinate and isinstance(c.subject, NounPhrase) and c.subject.rel is not None:
                    rel_in_sub = True
            clauses.append(c)
            return c

        if first == "if_first" and n >= 2:
            sub = new_clause(subordinate=True)
            main = new_clause(subordinate=False)
            en.append(f"if {sub.en()} , {main.en()}")
            de.append(main.de_main(front=sub.de_subordinate("wenn") + " ,"))
            connectives.append("if")
        elif first == "time":
            main = new_clause(subordinate=False)
            adverb_en, adverb_de = rng.choice(TIME_ADVERBS)
            en.append(f"{adverb_en} {main.en()}")
            de.append(main.de_main(front=adverb_de))
        else:
            main = new_clause(subordinate=False)
            en.append(main.en())
            de.append(main.de_main())
        while len(clauses) < n:
            previous = clauses[-1]
            if previous.verb in SAY_VERBS and previous.acc is None:
                word = "that"
            else:
                word = rng.choices(["because", "if", "and", "but"], weights=[35, 25, 25, 15])[0]
            connectives.append(word)
            if word in ("and", "but"):
                c = new_clause(subordinate=False)
                comma = rng.random() < (0.5 if word == "but" else 0.25)  # as people write them
                en.append(f"{', ' if comma else ''}{word} {c.en()}")
                de.append(f", {'und' if word == 'and' else 'aber'} {c.de_main()}")
            else:
                c = new_clause(subordinate=True)
                en.append(f"{word} {c.en()}")
                de.append(", " + c.de_subordinate({"because": "weil", "if": "wenn", "that": "dass"}[word]))
        pairs = set().union(*(c.pairs() for c in clauses))
        stack = max(c.stacks_in_pps() for c in clauses)
        return Sentence(" ".join(en) + " .", tidy(" ".join(de) + " ."), pairs, connectives, stack, rel_in_sub)


HELD_OUT_LENGTHS = (22, 25, 28)
HELD_OUT_NESTINGS = {("that", "because"), ("because", "if")}
MAX_WORDS = 30
CONSTRUCTIONS = ("adjectives x3 in a pp", "relative clause in a subordinate clause", "clause nesting",
                 "held-out length", "held-out word pair")


def _held_out_pairs(rng: random.Random, fraction: float = 0.05) -> set[tuple[str, str]]:
    """A random ``fraction`` of the possible (adjective, noun) and (subject noun, verb) pairs."""
    adj_noun = sorted((a.en, n.en) for a in ADJECTIVES for n in NOUNS if a.kinds & n.kinds)
    animate = [n for n in NOUNS if "animate" in n.kinds]
    subj_verb = sorted((n.en, v.de_inf) for n in animate for v in VERBS)
    held = set(rng.sample(adj_noun, int(len(adj_noun) * fraction)))
    return held | set(rng.sample(subj_verb, int(len(subj_verb) * fraction)))


def held_out_construction(s: Sentence, held_pairs: set) -> str | None:
    """The first of ``CONSTRUCTIONS`` that ``s`` uses, or None (it may go to training)."""
    if s.pp_stack >= 3:
        return CONSTRUCTIONS[0]
    if s.relative_in_subordinate:
        return CONSTRUCTIONS[1]
    if set(zip(s.connectives, s.connectives[1:])) & HELD_OUT_NESTINGS:
        return CONSTRUCTIONS[2]
    if len(s.en.split()) in HELD_OUT_LENGTHS:
        return CONSTRUCTIONS[3]
    if s.pairs & held_pairs:
        return CONSTRUCTIONS[4]
    return None


def _fits(s: Sentence) -> bool:
    return 4 <= len(s.en.split()) <= MAX_WORDS


def generate_pairs(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` distinct (english, german) pairs from the whole grammar, held-out constructions included."""
    grammar, seen, out = _Grammar(random.Random(seed)), set(), []
    while len(out) < n:
        s = grammar.sentence()
        if s.en not in seen and _fits(s):
            seen.add(s.en)
            out.append((s.en, s.de))
    return out


def make_splits(seed: int = 0, n_train: int = 20000, n_valid: int = 1000, n_test: int = 1000) -> dict[str, list]:
    """train / valid / test lists of (english, german), and ``constructions``: the held-out
    construction of each test pair (about as many of each, in random order).

    The test split comes from its own random stream and holds only sentences with a held-out
    construction, which train and valid never have: so the splits are disjoint, and the test
    split is the same whatever ``n_train`` (evaluation can skip building the training split)."""
    rng = random.Random(seed)
    held = _held_out_pairs(rng)
    splits: dict[str, list] = {"train": [], "valid": [], "test": [], "constructions": []}
    grammar, seen, budget = _Grammar(rng), set(), 200 * (n_train + n_valid) + 10000
    while (len(splits["train"]) < n_train or len(splits["valid"]) < n_valid) and budget > 0:
        budget -= 1
        s = grammar.sentence()
        if s.en in seen or not _fits(s) or held_out_construction(s, held) is not None:
            continue
        name = "valid" if len(splits["valid"]) < n_valid and rng.random() < 0.1 else "train"
        if len(splits[name]) < (n_train if name == "train" else n_valid):
            seen.add(s.en)
            splits[name].append((s.en, s.de))
    quota = {c: n_test // len(CONSTRUCTIONS) + (i < n_test % len(CONSTRUCTIONS)) for i, c in enumerate(CONSTRUCTIONS)}
    grammar, seen, budget = _Grammar(random.Random(f"test-{seed}")), set(), 2000 * n_test + 10000
    while len(splits["test"]) < n_test and budget > 0:
        budget -= 1
        s = grammar.sentence()
        construction = held_out_construction(s, held) if _fits(s) and s.en not in seen else None
        if construction is not None and quota[construction] > 0:
            quota[construction] -= 1
            seen.add(s.en)
            splits["test"].append((s.en, s.de))
            splits["constructions"].append(construction)
    return splits


def handwritten_pairs() -> list[tuple[str, str]]:
    """Sentences written by hand (as people type them: capitals, punctuation attached) in the
    grammar's words but not made by it, with German checked by hand: resources/corpora."""
    from attnscope.engine.corpora.pairs_file import read_pairs_tsv

    return read_pairs_tsv(resource("corpora", "handwritten_en_de.tsv"))
