"""The synthetic corpus: correct German for each construction, deterministic, honest splits."""
import pytest

from engine.corpora.german import Clause, NounPhrase, Pronoun, make_splits, generate_pairs
from engine.corpora.german_lexicon import (ADJECTIVES, FREQUENCY_ADVERBS, NAMES, NOUNS, SAY_VERBS, TIME_ADVERBS,
                                           VERBS)
from engine.corpora.english_text import python_docs_text, read_text_file
from engine.corpora.pairs_file import read_pairs_tsv

N = {n.en: n for n in NOUNS}
A = {a.en: a for a in ADJECTIVES}
V = {v.en: v for v in VERBS}


def np_(noun, det="def", adj=None, plural=False):
    return NounPhrase(N[noun], det, A[adj] if adj else None, plural)


def clause(subject, verb, **kw):
    return Clause(subject, V[verb] if verb else None, **kw)


I, YOU, WE, YOU_ALL = Pronoun("i", "ich", 0), Pronoun("you", "du", 1), Pronoun("we", "wir", 3), Pronoun("you all", "ihr", 4)
BIG_DOG = np_("dog", adj="big")

HAND_CHECKED = [
    # (clause -> rendering, english, german)
    (clause(BIG_DOG, "sleep"), "main", "the big dog sleeps", "der große hund schläft"),
    (clause(np_("man"), "see", acc=BIG_DOG), "main", "the man sees the big dog", "der mann sieht den großen hund"),
    (clause(np_("woman"), "see", acc=np_("dog", "ein", "big")), "main",
     "the woman sees a big dog", "die frau sieht einen großen hund"),
    (clause(np_("woman"), "give", dat=np_("man"), acc=np_("book", "ein")), "main",
     "the woman gives the man a book", "die frau gibt dem mann ein buch"),
    (clause(np_("child"), "help", dat=np_("woman", adj="old")), "main",
     "the child helps the old woman", "das kind hilft der alten frau"),
    (clause(np_("dog", "none", "small", plural=True), "play", pp=("with the children", "mit den kindern")), "main",
     "small dogs play with the children", "kleine hunde spielen mit den kindern"),
    (clause(np_("man"), "call", acc=np_("woman")), "main", "the man calls the woman", "der mann ruft die frau an"),
    (clause(I, "sleep", modal="can"), "main", "i can sleep", "ich kann schlafen"),
    (clause(np_("cat", "mein"), "eat", modal="want", acc=np_("apple", "ein", "red")), "main",
     "my cat wants to eat a red apple", "meine katze will einen roten apfel essen"),
    (clause(np_("man"), "see", acc=np_("dog", "ein"), negated=True), "main",
     "the man does not see a dog", "der mann sieht keinen hund"),
    (clause(np_("man"), "see", acc=np_("dog"), negated=True), "main",
     "the man does not see the dog", "der mann sieht den hund nicht"),
    (clause(YOU, "read", acc=np_("book", "mein", "new")), "question", "do you read my new book ?",
     "liest du mein neues buch ?"),
    (clause(np_("dog"), None, predicate=A["tired"]), "question", "is the dog tired ?", "ist der hund müde ?"),
    (clause(np_("dog"), "sleep"), "weil", "the dog sleeps", "weil der hund schläft"),
    (clause(np_("man"), "call", acc=np_("woman", adj="young")), "dass", "the man calls the young woman",
     "dass der mann die junge frau anruft"),
    (clause(WE, "clean up", modal="must", acc=np_("room")), "wenn", "we must clean up the room",
     "wenn wir das zimmer aufräumen müssen"),
    (clause(YOU_ALL, "go", pp=("to the school", "zur schule")), "main", "you all go to the school", "ihr geht zur schule"),
    (clause(np_("teacher", plural=True), "thank", dat=np_("cook", "none", "friendly", plural=True)), "main",
     "the teachers thank friendly cooks", "die lehrer danken freundlichen köchen"),
    (clause(YOU, "dance", negated=True), "main", "you do not dance", "du tanzt nicht"),
    (clause(np_("girl", "ein"), "work", modal="can", negated=True), "main", "a girl cannot work", "ein mädchen kann nicht arbeiten"),
]


@pytest.mark.parametrize("c, how, en, de", HAND_CHECKED, ids=[h[3] for h in HAND_CHECKED])
def test_hand_checked_translations(c, how, en, de):
    if how == "main":
        assert (c.en(), c.de_main()) == (en, de)
    elif how == "question":
        assert (c.en_question(), c.de_question()) == (en, de)
    else:
        assert (c.en(), c.de_subordinate(how)) == (en, de)


def test_verb_second_after_fronted_adverb_and_wenn_clause():
    c = clause(np_("dog"), "sleep")
    assert c.de_main(front="heute") == "heute schläft der hund"
    sub = clause(np_("cat"), "switch on", acc=np_("lamp"))
    assert c.de_main(front=sub.de_subordinate("wenn") + " ,") == "wenn die katze die lampe einschaltet , schläft der hund"


def test_prepositions_contract_with_the_article():
    assert np_("garden").de_after("in") == "im garten"
    assert np_("kitchen", adj="big").de_after("in") == "in der großen küche"
    assert np_("station").de_after("zu") == "zum bahnhof"
    assert np_("school").de_after("zu") == "zur schule"


def test_lexicon_is_big_enough():
    lemmas = (len(NOUNS) + len(VERBS) + len(ADJECTIVES) + len(SAY_VERBS) + len(NAMES)
              + len(TIME_ADVERBS) + len(FREQUENCY_ADVERBS))
    assert lemmas >= 150


def test_splits_are_deterministic_and_disjoint():
    a = make_splits(seed=1, n_train=800, n_valid=100, n_test=100)
    b = make_splits(seed=1, n_train=800, n_valid=100, n_test=100)
    assert a == b
    assert {k: len(v) for k, v in a.items()} == {"train": 800, "valid": 100, "test": 100}
    english = [{en for en, _ in a[k]} for k in ("train", "valid", "test")]
    assert not (english[0] & english[1]) and not (english[0] & english[2]) and not (english[1] & english[2])
    assert make_splits(seed=2, n_train=800, n_valid=100, n_test=100) != a


def test_test_split_holds_combinations_never_seen_in_training():
    from engine.corpora import german
    import random
    held = german._held_out_pairs(random.Random(1))
    splits = make_splits(seed=1, n_train=800, n_valid=100, n_test=100)
    adj_noun = {(a, n) for a, n in held if a in A}
    def uses(sentence):
        words = sentence.split()
        return any((a, n) in adj_noun for a, n in zip(words, words[1:]))
    # adjacent "adjective noun" in English is exactly an (adjective, noun) pair of the grammar
    assert not any(uses(en) for en, _ in splits["train"])
    assert sum(uses(en) for en, _ in splits["test"]) > 10


def test_generated_sentences_are_lower_case_with_spaced_punctuation():
    for en, de in generate_pairs(200, seed=4):
        assert en == en.lower() and de == de.lower()
        assert en.split()[-1] in (".", "?") and de.split()[-1] in (".", "?")
        assert 4 <= len(en.split()) <= 20


def test_pairs_tsv(tmp_path):
    good = tmp_path / "deu.txt"
    good.write_text("Go.\tGeh.\tCC-BY 2.0 (France) Attribution: tatoeba.org\n\nHi.\tHallo!\n", encoding="utf-8")
    assert read_pairs_tsv(good) == [("Go.", "Geh."), ("Hi.", "Hallo!")]
    bad = tmp_path / "bad.txt"
    bad.write_text("Go.\tGeh.\nno tab here\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2"):
        read_pairs_tsv(bad)
    latin = tmp_path / "latin.txt"
    latin.write_bytes("Grüß\tGott\n".encode("latin-1"))
    with pytest.raises(ValueError, match="UTF-8"):
        read_pairs_tsv(latin)
    with pytest.raises(ValueError, match="No such"):
        read_pairs_tsv(tmp_path / "missing.txt")


def test_english_text_sources(tmp_path):
    docs = python_docs_text()
    assert len(docs.split()) > 10000 and " the " in docs
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n", encoding="utf-8")
    with pytest.raises(ValueError, match="empty"):
        read_text_file(empty)
