"""The words of the synthetic English->German corpus, with what German grammar needs.

Nouns carry gender and both plurals; verbs carry their German conjugation (regular verbs
are computed, the irregular persons are written out); adjectives carry the stem the
endings attach to ("teur" for teuer: "der teure Wagen"). Weak masculine nouns (der Junge,
den Jungen) are left out on purpose: with them a correct corpus needs n-declension too.
Everything is lower case, as in the corpus.
"""
from __future__ import annotations

from dataclasses import dataclass, field

PERSONS = 6  # ich, du, er/sie/es, wir, ihr, sie (plural)


@dataclass(frozen=True)
class Noun:
    en: str
    en_pl: str
    de: str
    de_pl: str
    gender: str           # "m" | "f" | "n"
    kinds: frozenset      # semantic classes: animate, thing, food, readable, place, openable, switchable

    @property
    def de_pl_dat(self) -> str:
        """Dative plural adds -n unless the plural ends in -n or -s (den Kindern, den Autos)."""
        return self.de_pl if self.de_pl.endswith(("n", "s")) else self.de_pl + "n"


def _n(en, en_pl, de, de_pl, gender, kinds) -> Noun:
    return Noun(en, en_pl, de, de_pl, gender, frozenset(kinds.split()))


NOUNS = [
    # people
    _n("man", "men", "mann", "männer", "m", "animate person"),
    _n("woman", "women", "frau", "frauen", "f", "animate person"),
    _n("child", "children", "kind", "kinder", "n", "animate person"),
    _n("teacher", "teachers", "lehrer", "lehrer", "m", "animate person"),
    _n("doctor", "doctors", "arzt", "ärzte", "m", "animate person"),
    _n("friend", "friends", "freund", "freunde", "m", "animate person"),
    _n("girl", "girls", "mädchen", "mädchen", "n", "animate person"),
    _n("father", "fathers", "vater", "väter", "m", "animate person"),
    _n("mother", "mothers", "mutter", "mütter", "f", "animate person"),
    _n("brother", "brothers", "bruder", "brüder", "m", "animate person"),
    _n("sister", "sisters", "schwester", "schwestern", "f", "animate person"),
    _n("cook", "cooks", "koch", "köche", "m", "animate person"),
    _n("king", "kings", "könig", "könige", "m", "animate person"),
    _n("baker", "bakers", "bäcker", "bäcker", "m", "animate person"),
    # animals
    _n("dog", "dogs", "hund", "hunde", "m", "animate animal"),
    _n("cat", "cats", "katze", "katzen", "f", "animate animal"),
    _n("horse", "horses", "pferd", "pferde", "n", "animate animal"),
    _n("bird", "birds", "vogel", "vögel", "m", "animate animal"),
    _n("mouse", "mice", "maus", "mäuse", "f", "animate animal"),
    _n("cow", "cows", "kuh", "kühe", "f", "animate animal"),
    _n("pig", "pigs", "schwein", "schweine", "n", "animate animal"),
    # things
    _n("book", "books", "buch", "bücher", "n", "thing readable"),
    _n("letter", "letters", "brief", "briefe", "m", "thing readable openable"),
    _n("newspaper", "newspapers", "zeitung", "zeitungen", "f", "thing readable"),
    _n("ball", "balls", "ball", "bälle", "m", "thing"),
    _n("car", "cars", "auto", "autos", "n", "thing"),
    _n("chair", "chairs", "stuhl", "stühle", "m", "thing"),
    _n("table", "tables", "tisch", "tische", "m", "thing"),
    _n("lamp", "lamps", "lampe", "lampen", "f", "thing switchable"),
    _n("door", "doors", "tür", "türen", "f", "thing openable"),
    _n("window", "windows", "fenster", "fenster", "n", "thing openable"),
    _n("key", "keys", "schlüssel", "schlüssel", "m", "thing"),
    _n("cup", "cups", "tasse", "tassen", "f", "thing"),
    _n("bag", "bags", "tasche", "taschen", "f", "thing openable"),
    _n("picture", "pictures", "bild", "bilder", "n", "thing"),
    _n("flower", "flowers", "blume", "blumen", "f", "thing"),
    _n("hat", "hats", "hut", "hüte", "m", "thing"),
    _n("radio", "radios", "radio", "radios", "n", "thing switchable"),
    _n("computer", "computers", "computer", "computer", "m", "thing switchable"),
    _n("phone", "phones", "telefon", "telefone", "n", "thing switchable"),
    _n("box", "boxes", "kiste", "kisten", "f", "thing openable"),
    # food
    _n("apple", "apples", "apfel", "äpfel", "m", "food"),
    _n("cake", "cakes", "kuchen", "kuchen", "m", "food"),
    _n("egg", "eggs", "ei", "eier", "n", "food"),
    _n("banana", "bananas", "banane", "bananen", "f", "food"),
    _n("pear", "pears", "birne", "birnen", "f", "food"),
    _n("orange", "oranges", "orange", "orangen", "f", "food"),
    _n("carrot", "carrots", "karotte", "karotten", "f", "food"),
    _n("sausage", "sausages", "wurst", "würste", "f", "food"),
    _n("tomato", "tomatoes", "tomate", "tomaten", "f", "food"),
    # places (singular, definite, after "in" / "to")
    _n("garden", "gardens", "garten", "gärten", "m", "place"),
    _n("park", "parks", "park", "parks", "m", "place"),
    _n("house", "houses", "haus", "häuser", "n", "place"),
    _n("kitchen", "kitchens", "küche", "küchen", "f", "place"),
    _n("school", "schools", "schule", "schulen", "f", "place"),
    _n("city", "cities", "stadt", "städte", "f", "place"),
    _n("room", "rooms", "zimmer", "zimmer", "n", "place"),
    _n("forest", "forests", "wald", "wälder", "m", "place"),
    _n("office", "offices", "büro", "büros", "n", "place"),
    _n("station", "stations", "bahnhof", "bahnhöfe", "m", "place"),
]

NAMES = ["anna", "peter", "maria", "thomas", "lisa", "paul", "julia", "max", "sophie", "felix", "emma", "lukas"]


@dataclass(frozen=True)
class Adjective:
    en: str
    de: str        # the predicative form: "der hund ist teuer"
    stem: str      # what endings attach to: teur-e, groß-e
    kinds: frozenset  # noun classes it may describe


def _a(en, de, kinds, stem=None) -> Adjective:
    return Adjective(en, de, stem or de, frozenset(kinds.split()))


_ANY = "animate thing food place"
ADJECTIVES = [
    _a("big", "groß", _ANY), _a("small", "klein", _ANY), _a("old", "alt", _ANY),
    _a("beautiful", "schön", _ANY), _a("good", "gut", _ANY),
    _a("new", "neu", "thing place"), _a("red", "rot", "thing food"), _a("green", "grün", "thing food"),
    _a("blue", "blau", "thing"), _a("black", "schwarz", "thing animal"), _a("white", "weiß", "thing animal"),
    _a("expensive", "teuer", "thing", "teur"), _a("cheap", "billig", "thing"), _a("heavy", "schwer", "thing"),
    _a("young", "jung", "animate"), _a("tired", "müde", "animate", "müd"), _a("hungry", "hungrig", "animate"),
    _a("friendly", "freundlich", "animate"), _a("funny", "lustig", "animate"), _a("clever", "klug", "animate"),
    _a("happy", "glücklich", "animate"), _a("rich", "reich", "person"), _a("poor", "arm", "person"),
    _a("fresh", "frisch", "food"), _a("sweet", "süß", "food"),
]


@dataclass(frozen=True)
class Verb:
    en: str                 # base form; particles included ("pick up")
    en_3sg: str             # "picks up"
    de: tuple               # the six present-tense forms, ich .. sie (plural), without the particle
    de_inf: str             # the infinitive, particle included ("abholen")
    particle: str = ""      # separable prefix, sent to the clause end in main clauses
    frame: str = "intr"     # intr | acc | dat | ditr (dative + accusative)
    obj: frozenset = field(default_factory=frozenset)  # classes of the (accusative) object
    motion: bool = False    # may take "to the X" (zu + dative)


def conjugate(inf: str, du: str | None = None, er: str | None = None) -> tuple:
    """Present tense of a regular verb, with the vowel-changing du/er forms given by hand.

    Stems in -t/-d/-chn/-ffn take an -e- (du arbeitest, er findet); stems in s/ß/z/x drop
    the s of -st (du tanzt)."""
    stem = inf[:-2] if inf.endswith("en") else inf[:-1]
    e = "e" if stem.endswith(("t", "d", "chn", "ffn")) else ""
    st = "t" if stem.endswith(("s", "ß", "z", "x")) else "st"
    return (stem + "e", du or stem + e + st, er or stem + e + "t", inf, stem + e + "t", inf)


def _v(en, en_3sg, inf, frame="intr", obj="", du=None, er=None, forms=None, particle="", motion=False) -> Verb:
    de = forms or conjugate(inf, du, er)
    return Verb(en, en_3sg, de, particle + inf, particle, frame, frozenset(obj.split()), motion)


_THING = "thing food"
VERBS = [
    # intransitive
    _v("sleep", "sleeps", "schlafen", du="schläfst", er="schläft"),
    _v("run", "runs", "laufen", du="läufst", er="läuft", motion=True),
    _v("laugh", "laughs", "lachen"),
    _v("work", "works", "arbeiten"),
    _v("swim", "swims", "schwimmen"),
    _v("sing", "sings", "singen"),
    _v("wait", "waits", "warten"),
    _v("play", "plays", "spielen"),
    _v("dance", "dances", "tanzen"),
    _v("cry", "cries", "weinen"),
    _v("come", "comes", "kommen", motion=True),
    _v("go", "goes", "gehen", motion=True),
    _v("sit", "sits", "sitzen"),
    # accusative object
    _v("see", "sees", "sehen", "acc", "animate thing food place", du="siehst", er="sieht"),
    _v("find", "finds", "finden", "acc", "animate thing food"),
    _v("buy", "buys", "kaufen", "acc", _THING),
    _v("read", "reads", "lesen", "acc", "readable", du="liest", er="liest"),
    _v("eat", "eats", "essen", "acc", "food", du="isst", er="isst"),
    _v("like", "likes", "mögen", "acc", "animate thing food",
       forms=("mag", "magst", "mag", "mögen", "mögt", "mögen")),
    _v("need", "needs", "brauchen", "acc", _THING),
    _v("love", "loves", "lieben", "acc", "animate"),
    _v("visit", "visits", "besuchen", "acc", "person"),
    _v("hear", "hears", "hören", "acc", "animate"),
    _v("paint", "paints", "malen", "acc", "animate thing"),
    _v("open", "opens", "öffnen", "acc", "openable"),
    _v("carry", "carries", "tragen", "acc", _THING, du="trägst", er="trägt"),
    _v("wash", "washes", "waschen", "acc", "thing animal", du="wäschst", er="wäscht"),
    _v("take", "takes", "nehmen", "acc", _THING, du="nimmst", er="nimmt"),
    _v("cook", "cooks", "kochen", "acc", "food"),
    _v("write", "writes", "schreiben", "acc", "readable"),
    _v("know", "knows", "kennen", "acc", "person"),
    # dative object
    _v("help", "helps", "helfen", "dat", du="hilfst", er="hilft"),
    _v("thank", "thanks", "danken", "dat"),
    _v("follow", "follows", "folgen", "dat"),
    # dative + accusative
    _v("give", "gives", "geben", "ditr", _THING, du="gibst", er="gibt"),
    _v("show", "shows", "zeigen", "ditr", _THING),
    _v("bring", "brings", "bringen", "ditr", _THING),
    _v("send", "sends", "schicken", "ditr", "thing"),
    _v("sell", "sells", "verkaufen", "ditr", "thing"),
    # separable: the particle goes to the end of a main clause
    _v("call", "calls", "rufen", "acc", "person", particle="an"),
    _v("invite", "invites", "laden", "acc", "person", du="lädst", er="lädt", particle="ein"),
    _v("pick up", "picks up", "holen", "acc", "person thing", particle="ab"),
    _v("clean up", "cleans up", "räumen", "acc", "place", particle="auf"),
    _v("switch on", "switches on", "schalten", "acc", "switchable", particle="ein"),
    _v("switch off", "switches off", "schalten", "acc", "switchable", particle="aus"),
    _v("get up", "gets up", "stehen", particle="auf"),
    _v("go shopping", "goes shopping", "kaufen", particle="ein"),
]

# Modal verbs: English form per person (index 2 is the third person singular) and German forms.
MODALS = {
    "can": (("can",) * 6, ("kann", "kannst", "kann", "können", "könnt", "können"), "cannot"),
    "want": (("want to", "want to", "wants to", "want to", "want to", "want to"),
             ("will", "willst", "will", "wollen", "wollt", "wollen"), None),
    "must": (("must",) * 6, ("muss", "musst", "muss", "müssen", "müsst", "müssen"), None),
}

# Verbs that take a "that" clause (dass + verb-final).
SAY_VERBS = [
    _v("know", "knows", "wissen", forms=("weiß", "weißt", "weiß", "wissen", "wisst", "wissen")),
    _v("think", "thinks", "denken"),
    _v("say", "says", "sagen"),
    _v("believe", "believes", "glauben"),
    _v("hope", "hopes", "hoffen"),
]

BE = (("am", "are", "is", "are", "are", "are"), ("bin", "bist", "ist", "sind", "seid", "sind"))

# Subject pronouns: English, German, person index.
PRONOUNS = [("i", "ich", 0), ("you", "du", 1), ("he", "er", 2), ("she", "sie", 2),
            ("we", "wir", 3), ("you all", "ihr", 4), ("they", "sie", 5)]

# Adverbs: fronted time adverbs invert subject and verb (verb second); frequency adverbs
# stand after the finite verb in German and before it in English.
TIME_ADVERBS = [("today", "heute"), ("tomorrow", "morgen"), ("now", "jetzt"), ("sometimes", "manchmal"),
                ("in the evening", "am abend"), ("in the morning", "am morgen")]
FREQUENCY_ADVERBS = [("often", "oft"), ("always", "immer"), ("rarely", "selten"), ("usually", "meistens")]

