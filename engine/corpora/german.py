"""A synthetic English->German parallel corpus, made by a small grammar, deterministic by seed.

Why synthetic: no parallel corpus can be fetched offline, and a grammar we control makes
the attention worth looking at. Every construction forces an alignment a head must learn:

- articles and adjectives declined for gender, number and case ("the big dog" is "der große
  hund", "den großen hund" or "dem großen hund" by its role; "a small cat" after "mit" is
  "einer kleinen katze"), with weak, mixed and strong adjective endings;
- verbs conjugated for person and number (ich schlafe, du schläfst, er schläft ...);
- verb-second main clauses, also after a fronted time adverb or "wenn" clause
  ("today the dog sleeps" -> "heute schläft der hund");
- verb-final subordinate clauses after weil / dass / wenn;
- separable verbs ("the man calls the woman" -> "der mann ruft die frau an") and modal
  verbs ("can sleep" -> "kann ... schlafen") that send a word to the end of the clause;
- negation with "nicht" (definite objects) and "kein" (indefinite ones);
- yes/no questions with the verb first; datives after mit / zu / in and with helfen, geben.

The splits: ``make_splits`` holds out a random tenth of the (adjective, noun) pairs and of
the (subject noun, verb) pairs, chosen by the seed. A sentence that uses any held-out pair
can only go to the test split, and every test sentence uses at least one, so the test
measures combinations the model never saw in training. Train and valid are drawn from the
same distribution; no English sentence appears in two splits.

Output is lower case with punctuation as separate tokens: "der große hund schläft ."
"""
from __future__ import annotations

import random
from dataclasses import dataclass, replace

from engine.corpora.german_lexicon import (ADJECTIVES, BE, FREQUENCY_ADVERBS, MODALS, NAMES, NOUNS, PRONOUNS,
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


@dataclass(frozen=True)
class NounPhrase:
    """A noun with determiner ("def", "ein", "mein" or "none" for a bare plural) and an
    optional adjective, or a name. Rendered per case; ``negated`` turns ein/none into kein."""

    noun: Noun | None = None
    det: str = "def"
    adj: Adjective | None = None
    plural: bool = False
    name: str | None = None

    @property
    def person(self) -> int:
        return 5 if self.plural else 2

    @property
    def indefinite(self) -> bool:
        return self.name is None and self.det in ("ein", "none")

    def en(self) -> str:
        if self.name:
            return self.name
        words = ([self.adj.en] if self.adj else []) + [self.noun.en_pl if self.plural else self.noun.en]
        if self.det == "def":
            words.insert(0, "the")
        elif self.det == "mein":
            words.insert(0, "my")
        elif self.det == "ein":
            words.insert(0, "an" if words[0][0] in "aeiou" else "a")
        return " ".join(words)

    def de(self, case: str = "nom", negated: bool = False) -> str:
        if self.name:
            return self.name
        g = "pl" if self.plural else self.noun.gender
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
        if self.adj:
            words.append(self.adj.stem + ending)
        if self.plural:
            words.append(self.noun.de_pl_dat if case == "dat" else self.noun.de_pl)
        else:
            words.append(self.noun.de)
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

    def en(self) -> str:
        return self.en_word

    def de(self, case: str = "nom", negated: bool = False) -> str:
        return self.de_word


@dataclass(frozen=True)
class Clause:
    """One clause, rendered as an English clause and as a German main, question or
    subordinate clause. ``verb`` None means the copula with ``predicate``."""

    subject: NounPhrase | Pronoun
    verb: Verb | None
    predicate: Adjective | None = None
    modal: str | None = None
    dat: NounPhrase | None = None
    acc: NounPhrase | None = None
    pp: tuple[str, str] | None = None     # (english, german)
    pp_phrase: NounPhrase | None = None   # the noun phrase inside ``pp``, for the held-out rule
    negated: bool = False
    frequency: tuple[str, str] | None = None

    # ---- English -------------------------------------------------------------------
    def _en_rest(self) -> list[str]:
        words = [self.dat.en()] if self.dat else []
        words += [self.acc.en()] if self.acc else []
        return words + ([self.pp[0]] if self.pp else [])

    def en(self) -> str:
        p, s = self.subject.person, self.subject.en()
        if self.verb is None:
            return " ".join([s, BE[0][p]] + (["not"] if self.negated else []) + [self.predicate.en])
        if self.modal:
            forms, _, neg = MODALS[self.modal]
            if self.negated:
                head = [neg] if neg else ["does" if p == 2 else "do", "not", forms[0]]
            else:
                head = [forms[p]]
            return " ".join([s] + head + [self.verb.en] + self._en_rest())
        if self.negated:
            head = ["does" if p == 2 else "do", "not", self.verb.en]
        else:
            head = [self.verb.en_3sg if p == 2 else self.verb.en]
        freq = [self.frequency[0]] if self.frequency else []
        return " ".join([s] + freq + head + self._en_rest())

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

    def _de_middle(self) -> list[str]:
        """The middle field: frequency adverb, objects, nicht, prepositional phrase, predicate."""
        words = [self.frequency[1]] if self.frequency else []
        kein_used = False
        if self.dat:
            kein = self.negated and self.acc is None and self.dat.indefinite
            words.append(self.dat.de("dat", kein))
            kein_used |= kein
        if self.acc:
            kein = self.negated and self.acc.indefinite
            words.append(self.acc.de("acc", kein))
            kein_used |= kein
        if self.negated and not kein_used:
            words.append("nicht")
        if self.pp:
            words.append(self.pp[1])
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
        return " ".join(lead + self._de_middle() + self._de_final())

    def de_question(self) -> str:
        return " ".join([self._de_finite(), self.subject.de()] + self._de_middle() + self._de_final() + ["?"])

    def de_subordinate(self, conjunction: str) -> str:
        """Verb last: "weil der mann die frau anruft", "dass der hund schlafen kann"."""
        if self.verb is not None and not self.modal and self.verb.particle:
            end = [self.verb.particle + self._de_finite()]
        else:
            end = self._de_final() + [self._de_finite()]
        return " ".join([conjunction, self.subject.de()] + self._de_middle() + end)

    # ---- what the held-out rule looks at ---------------------------------------------
    def pairs(self) -> set[tuple[str, str]]:
        """(adjective, noun) and (subject noun, verb) pairs this clause uses."""
        out = set()
        for np_ in (self.subject, self.dat, self.acc, self.pp_phrase):
            if isinstance(np_, NounPhrase) and np_.adj is not None:
                out.add((np_.adj.en, np_.noun.en))
        if isinstance(self.subject, NounPhrase) and self.subject.noun is not None:
            verb = "be" if self.verb is None else self.verb.de_inf
            out.add((self.subject.noun.en, verb))
        return out


# ---- random generation ----------------------------------------------------------------
class _Grammar:
    def __init__(self, rng: random.Random):
        self.rng = rng

    def noun_phrase(self, kinds: frozenset | set, allow_name: bool = True, det: str | None = None) -> NounPhrase:
        rng = self.rng
        if allow_name and "person" in kinds and rng.random() < 0.2:
            return NounPhrase(name=rng.choice(NAMES))
        noun = rng.choice([n for n in NOUNS if n.kinds & kinds])
        plural = det is None and rng.random() < 0.25
        if det is None:
            det = rng.choice(["def", "def", "ein", "mein"] if not plural else ["def", "def", "none", "mein"])
        adjs = [a for a in ADJECTIVES if a.kinds & noun.kinds]
        adj = rng.choice(adjs) if adjs and rng.random() < 0.45 else None
        return NounPhrase(noun, det, adj, plural)

    def subject(self, kinds: frozenset = frozenset({"animate", "person"})):
        if self.rng.random() < 0.25:
            return Pronoun(*self.rng.choice(PRONOUNS))
        return self.noun_phrase(kinds)

    def prepositional_phrase(self, verb: Verb) -> tuple[tuple[str, str], NounPhrase]:
        """((english, german), the noun phrase in it): with + dative, in + dative, to -> zu."""
        rng = self.rng
        choice = rng.choice(["with", "in", "to"] if verb.motion else ["with", "in"])
        if choice == "with":
            np_ = self.noun_phrase({"animate", "person"})
            return (f"with {np_.en()}", f"mit {np_.de('dat')}"), np_
        place = self.noun_phrase({"place"}, allow_name=False, det="def")
        if choice == "in":
            return (f"in {place.en()}", place.de_after("in")), place
        return (f"to {place.en()}", place.de_after("zu")), place

    def clause(self, allow_frequency: bool = True) -> Clause:
        rng = self.rng
        subject = self.subject()
        negated = rng.random() < 0.2
        if rng.random() < 0.1:
            noun_kinds = subject.noun.kinds if isinstance(subject, NounPhrase) and subject.noun else {"person", "animate"}
            predicate = rng.choice([a for a in ADJECTIVES if a.kinds & noun_kinds])
            return Clause(subject, None, predicate=predicate, negated=negated)
        verb = rng.choice(VERBS)
        modal = rng.choice(["can", "want", "must"]) if rng.random() < 0.2 else None
        if modal == "must" and negated:
            modal = "can"
        dat = acc = pp = pp_phrase = None
        if verb.frame in ("dat", "ditr"):
            dat = self.noun_phrase({"animate", "person"})
        if verb.frame in ("acc", "ditr"):
            acc = self.noun_phrase(verb.obj)
        if not verb.particle and verb.frame in ("intr", "acc") and rng.random() < 0.3:
            pp, pp_phrase = self.prepositional_phrase(verb)
        frequency = None
        if allow_frequency and not negated and not modal and verb.frame != "ditr" and rng.random() < 0.15:
            frequency = rng.choice(FREQUENCY_ADVERBS)
        return Clause(subject, verb, modal=modal, dat=dat, acc=acc, pp=pp, pp_phrase=pp_phrase,
                      negated=negated, frequency=frequency)

    def sentence(self) -> tuple[str, str, set]:
        """One (english, german, pairs used) by a randomly chosen construction."""
        rng = self.rng
        kind = rng.choices(["plain", "time", "question", "because", "that", "if_first", "if_last"],
                           weights=[30, 12, 12, 12, 12, 11, 11])[0]
        c = self.clause()
        if kind == "plain":
            return c.en() + " .", c.de_main() + " .", c.pairs()
        if kind == "time":
            en, de = rng.choice(TIME_ADVERBS)
            return f"{en} {c.en()} .", c.de_main(front=de) + " .", c.pairs()
        if kind == "question":
            c = self.clause(allow_frequency=False)
            if c.modal == "must" or c.negated:
                c = replace(c, modal=None, negated=False)
            return c.en_question(), c.de_question(), c.pairs()
        sub = self.clause()
        pairs = c.pairs() | sub.pairs()
        if kind == "because":
            return f"{c.en()} because {sub.en()} .", f"{c.de_main()} , {sub.de_subordinate('weil')} .", pairs
        if kind == "that":
            subject, verb = self.subject(frozenset({"person"})), rng.choice(SAY_VERBS)
            say = Clause(subject, verb)
            pairs = say.pairs() | sub.pairs()
            return f"{say.en()} that {sub.en()} .", f"{say.de_main()} , {sub.de_subordinate('dass')} .", pairs
        if kind == "if_first":
            return f"if {sub.en()} , {c.en()} .", c.de_main(front=sub.de_subordinate("wenn") + " ,") + " .", pairs
        return f"{c.en()} if {sub.en()} .", f"{c.de_main()} , {sub.de_subordinate('wenn')} .", pairs


def _held_out_pairs(rng: random.Random, fraction: float = 0.1) -> set[tuple[str, str]]:
    """A random ``fraction`` of the possible (adjective, noun) and (subject noun, verb) pairs."""
    adj_noun = sorted((a.en, n.en) for a in ADJECTIVES for n in NOUNS if a.kinds & n.kinds)
    animate = [n for n in NOUNS if "animate" in n.kinds]
    subj_verb = sorted((n.en, v.de_inf) for n in animate for v in VERBS)
    held = set(rng.sample(adj_noun, int(len(adj_noun) * fraction)))
    return held | set(rng.sample(subj_verb, int(len(subj_verb) * fraction)))


def generate_pairs(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` distinct (english, german) pairs from the whole grammar, held-out pairs included."""
    grammar, seen, out = _Grammar(random.Random(seed)), set(), []
    while len(out) < n:
        en, de, _ = grammar.sentence()
        if en not in seen and 4 <= len(en.split()) <= 20:
            seen.add(en)
            out.append((en, de))
    return out


def make_splits(seed: int = 0, n_train: int = 20000, n_valid: int = 1000, n_test: int = 1000) -> dict[str, list[tuple[str, str]]]:
    """train / valid / test lists of (english, german); see the module docstring for the rule."""
    rng = random.Random(seed)
    held = _held_out_pairs(rng)
    grammar = _Grammar(rng)
    splits = {"train": [], "valid": [], "test": []}
    want = {"train": n_train, "valid": n_valid, "test": n_test}
    seen: set[str] = set()
    budget = 200 * (n_train + n_valid + n_test) + 10000
    while any(len(splits[k]) < want[k] for k in splits) and budget > 0:
        budget -= 1
        en, de, pairs = grammar.sentence()
        if en in seen or not 4 <= len(en.split()) <= 20:
            continue
        if pairs & held:
            name = "test"
        else:
            name = "valid" if len(splits["valid"]) < n_valid and rng.random() < 0.1 else "train"
        if len(splits[name]) < want[name]:
            seen.add(en)
            splits[name].append((en, de))
    return splits
