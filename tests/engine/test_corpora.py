"""The synthetic corpus: correct German for each construction, deterministic, honest splits."""
import pytest

from attnscope.engine.corpora.german import (CONSTRUCTIONS, HELD_OUT_LENGTHS, Clause, Gap, NounPhrase, PrepPhrase, Pronoun,
                                   Relative, generate_pairs, handwritten_pairs, make_splits, tidy)
from attnscope.engine.corpora.german_lexicon import (ADJECTIVES, FREQUENCY_ADVERBS, NAMES, NOUNS, SAY_VERBS, TIME_ADVERBS,
                                           VERBS)
from attnscope.engine.corpora.english_text import read_text_file
from attnscope.engine.corpora.pairs_file import read_pairs_tsv

N = {n.en: n for n in NOUNS}
A = {a.en: a for a in ADJECTIVES}
V = {v.en: v for v in VERBS}


def np_(noun, det="def", adj=None, plural=False, rel=None):
    adjs = tuple(A[a] for a in adj.split()) if adj else ()
    return NounPhrase(N[noun], det, adjs, plural, rel=rel)


def pp(en, phrase):
    from attnscope.engine.corpora.german import PREPOSITIONS
    de, case, _, _ = PREPOSITIONS[en]
    return PrepPhrase(en, de, case, phrase)


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
    (clause(np_("dog", "none", "small", plural=True), "play", pps=(pp("with", np_("child", plural=True)),)), "main",
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
    (clause(YOU_ALL, "go", pps=(pp("to", np_("school")),)), "main", "you all go to the school", "ihr geht zur schule"),
    # stacked adjectives take one ending
    (clause(np_("dog", adj="big old"), "sleep"), "main", "the big old dog sleeps", "der große alte hund schläft"),
    (clause(np_("man"), "buy", acc=np_("tomato", "none", "fresh red", plural=True)), "main",
     "the man buys fresh red tomatoes", "der mann kauft frische rote tomaten"),
    (clause(np_("woman"), "see", acc=np_("car", "ein", "beautiful big new")), "main",
     "the woman sees a beautiful big new car", "die frau sieht ein schönes großes neues auto"),
    (clause(np_("child"), "help", dat=np_("woman", "mein", "tired old")), "main",
     "the child helps my tired old woman", "das kind hilft meiner müden alten frau"),
    # chains of prepositional phrases, dative and accusative
    (clause(np_("dog"), "play", pps=(pp("with", np_("cat", adj="small")), pp("in", np_("garden", adj="big old")))),
     "main", "the dog plays with the small cat in the big old garden",
     "der hund spielt mit der kleinen katze im großen alten garten"),
    (clause(np_("woman"), "read", acc=np_("book", "ein"), pps=(pp("for", np_("child")), pp("without", np_("man")))),
     "main", "the woman reads a book for the child without the man",
     "die frau liest ein buch für das kind ohne den mann"),
    (clause(np_("man"), "go", pps=(pp("with", np_("dog", "mein")), pp("to", np_("station")))), "weil",
     "the man goes with my dog to the station", "weil der mann mit meinem hund zum bahnhof geht"),
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
    assert {k: len(v) for k, v in a.items()} == {"train": 800, "valid": 100, "test": 100, "constructions": 100}
    english = [{en for en, _ in a[k]} for k in ("train", "valid", "test")]
    assert not (english[0] & english[1]) and not (english[0] & english[2]) and not (english[1] & english[2])
    assert make_splits(seed=2, n_train=800, n_valid=100, n_test=100) != a
    assert make_splits(seed=1, n_train=0, n_valid=0, n_test=100)["test"] == a["test"]  # eval needs no training split


@pytest.fixture(scope="module")
def splits():
    return make_splits(seed=1, n_train=3000, n_valid=100, n_test=250)


def test_test_split_holds_combinations_never_seen_in_training(splits):
    from attnscope.engine.corpora import german
    import random
    held = german._held_out_pairs(random.Random(1))
    adj_noun = {(a, n) for a, n in held if a in A}
    def uses(sentence):
        words = sentence.split()
        return any((a, n) in adj_noun for a, n in zip(words, words[1:]))
    # adjacent "adjective noun" in English is exactly an (adjective, noun) pair of the grammar
    assert not any(uses(en) for en, _ in splits["train"])
    assert sum(uses(en) for en, _ in splits["test"]) > 10


def test_test_split_holds_constructions_and_lengths_never_seen_in_training(splits):
    assert set(splits["constructions"]) == set(CONSTRUCTIONS)
    assert all(splits["constructions"].count(c) == 50 for c in CONSTRUCTIONS)
    train_lengths = {len(en.split()) for en, _ in splits["train"]}
    assert not train_lengths & set(HELD_OUT_LENGTHS) and max(train_lengths) == 30
    for (en, _), c in zip(splits["test"], splits["constructions"]):
        if c == "held-out length":
            assert len(en.split()) in HELD_OUT_LENGTHS
    # what training does have: three-adjective stacks, relative clauses, long chains of clauses
    stacks = [en for en, de in splits["train"] if " , der " in de or " , die " in de or " , das " in de]
    assert len(stacks) > 100
    assert sum(de.count(",") >= 3 for _, de in splits["train"]) > 100


def test_relative_clauses_agree_and_take_the_case_of_their_role():
    sleeps = Relative("nom", clause(Gap(2), "sleep"), "that")
    assert np_("dog", rel=sleeps).de("acc") == "den hund , der schläft ,"
    assert np_("cat", rel=sleeps).en() == "the cat that sleeps"
    reads = Relative("acc", clause(np_("man"), "read", acc=Gap(2)), "that")
    assert np_("book", rel=reads).en() == "the book that the man reads"
    assert np_("book", rel=reads).de() == "das buch , das der mann liest ,"
    helps = Relative("dat", clause(np_("child"), "help", dat=Gap(5)), "whom")
    assert np_("woman", plural=True, rel=helps).de() == "die frauen , denen das kind hilft ,"
    calls = Relative("nom", clause(Gap(2), "call", acc=np_("woman"), negated=True), "who")
    main = clause(np_("man", rel=calls), "sleep")
    assert main.en() == "the man who does not call the woman sleeps"
    assert tidy(main.de_main() + " .") == "der mann , der die frau nicht anruft , schläft ."
    sees = clause(np_("girl"), "see", acc=np_("dog", "ein", rel=sleeps), negated=True)
    assert tidy(sees.de_main() + " .") == "das mädchen sieht keinen hund , der schläft ."


def test_a_relative_clause_only_follows_the_noun_a_main_clause_ends_on():
    assert clause(np_("man"), "see", acc=np_("dog")).last_slot() == "acc"
    assert clause(np_("man"), "see", acc=np_("dog"), negated=True).last_slot() is None  # nicht comes last
    assert clause(np_("man"), "call", acc=np_("woman")).last_slot() is None             # the particle does
    assert clause(np_("man"), "play", pps=(pp("with", np_("dog")), pp("in", np_("garden")))).last_slot() == 1


def test_handwritten_sentences_are_in_the_vocabulary_and_many():
    pairs = handwritten_pairs()
    assert len(pairs) >= 60
    words = {w for en, de in generate_pairs(3000, seed=0) for w in (en + " " + de).split()}
    for en, de in pairs:
        assert en[0].isupper() and en[-1] in ".?"          # as people type them
        assert de == de.lower() and de.split()[-1] in (".", "?")
        typed = en.lower().replace("n't", " not").replace("can not", "cannot").replace("ca not", "cannot")
        for w in typed.replace(",", " , ").replace(".", " .").replace("?", " ?").split() + de.split():
            assert w in words, (w, en)


def test_generated_sentences_are_lower_case_with_spaced_punctuation():
    for en, de in generate_pairs(200, seed=4):
        assert en == en.lower() and de == de.lower()
        assert en.split()[-1] in (".", "?") and de.split()[-1] in (".", "?")
        assert 4 <= len(en.split()) <= 30


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


def test_shakespeare_is_cased_prose_split_in_contiguous_runs():
    from attnscope.engine.corpora.shakespeare import RUN, contiguous_split, shakespeare_lines
    from attnscope.engine.corpora.sources import text_splits
    lines = shakespeare_lines()
    assert len(lines) > 30000 and any(line.startswith("Ham. To be, or not to be") for line in lines)
    train, valid = text_splits(None, 0)
    assert (train, valid) == contiguous_split(lines, 0)
    assert len(valid) * 20 == pytest.approx(len(lines), rel=0.01)
    start = lines.index(valid[0])
    assert valid[:RUN] == lines[start:start + RUN]  # a run of speeches, in order
    assert not set(valid[:RUN]) <= set(train)


def test_text_files(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n", encoding="utf-8")
    with pytest.raises(ValueError, match="empty"):
        read_text_file(empty)


def test_a_corpus_too_small_to_split_is_refused_by_name(tmp_path):
    """Holding out a part to validate (and, for pairs, to score) must leave something to
    learn from; else one sentence says how much there is and how much is needed."""
    from attnscope.engine.corpora.sources import text_splits, translation_splits

    pairs = tmp_path / "two.tsv"
    pairs.write_text("the dog\tder hund\nthe cat\tdie katze\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"two\.tsv holds 2 sentence pairs; training needs at least 3"):
        translation_splits(str(pairs))
    pairs.write_text("the dog\tder hund\nthe cat\tdie katze\na man\tein mann\n", encoding="utf-8")
    assert len(translation_splits(str(pairs))["train"]) == 1
    text = tmp_path / "one.txt"
    text.write_text("\n  just one line  \n\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"one\.txt has 1 line of text; training needs at least 2"):
        text_splits(str(text))
    text.write_text("one line\nanother line\n", encoding="utf-8")
    assert text_splits(str(text)) != ([], [])
