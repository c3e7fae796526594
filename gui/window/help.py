"""Help > What am I looking at: one page per view, reachable from each view's "?" button.

Written for a student who has just read "Attention Is All You Need": what a row, a column
and a colour mean in each view, and the three kinds of attention.
"""
from __future__ import annotations

from html import escape

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import (QDialog, QHBoxLayout, QListWidget, QTextBrowser, QToolButton, QWidget)

from attnscope.engine.inspection import statistics

def _statistics_list() -> str:
    """The one statistics list (engine/inspection/statistics.py) as the page's list: each
    entry's name and definition, so the page cannot drift from the columns."""
    items = "".join(f"<li><b>{s.name}</b>: {escape(s.definition)}</li>" for s in statistics.STATISTICS)
    return f"<ul>{items}</ul>"


KINDS = """
<h3>The kinds of attention</h3>
<ul>
<li><b>encoder self</b>: every token of the input looks at every token of the input (BERT, the
translator's encoder). Nothing is hidden.</li>
<li><b>decoder self</b>: every output token looks at itself and the tokens <i>before</i> it
(GPT, the translator's decoder). The future is masked, so the upper right triangle of
its maps is exactly 0.</li>
<li><b>cross</b>: every output token looks at the input tokens (encoder-decoder models: a
translator, T5, BART). This is where the alignment between the two sentences shows.</li>
<li><b>effective attention</b>: a hybrid's linear-attention or Mamba-2 layers (Qwen3.5,
Qwen3-Next, Bamba, Granite 4, Falcon-H1) have no softmax, but each output token is still a
weighted sum of the earlier tokens' values: the matrix of those weights, computed exactly by
the layer's own function. It is not a softmax: cells can be negative or past 1 (drawn blue
below 0 and red above, on a scale symmetric about 0 out to the largest value shown, which its
colour bar states; the readouts call a cell "mixing") and rows need not sum to 1.</li>
</ul>
"""

MAPS = """
<p>In every heatmap, <b>a row is a query</b> (the token that is looking) and <b>a column is
a key</b> (the token it looks at). The colour is the attention weight, from 0 to 1 as the
colorbar says; each row sums to 1 because it is a softmax over the keys.</p>
"""

PAGES: dict[str, str] = {
    "Heads overview": f"""<h2>Heads overview</h2>
<p>Every head of every layer at once: rows of tiles are layers (L0 at the top, the first
layer the text goes through), columns are heads (H0, H1, ...). Each tile is one head's
attention map for the text.</p>{MAPS}
<p>Hover a cell to read its layer, head, query, key and weight below the controls; click a
tile to open that head large in Head detail (every other view follows the same head).
"Attention" chooses the kind; "hide below" draws weak weights as 0.</p>
<p>An instruction-tuned model (its tokenizer has a chat template) shows a <b>chat</b> box beside the
text: ticked, the text is the user's turn of a chat (after the System line), written by the
model's own template, whose turn marks appear as tokens on the axes.</p>{KINDS}""",
    "Head detail": f"""<h2>Head detail</h2>
<p>One head, large, with its tokens on both axes: queries down the left, keys across the
top.</p>{MAPS}
<p>Arrow keys move to the next head (left/right) or layer (up/down). "mean of heads" and
"max of heads" summarise a layer. Display options (hide below, scale to max, hide
specials) change the drawing only: the readout under the mouse always gives the true
weight.</p>
<p>A long text (more than 1,024 tokens) opens as a viewport: the whole head first, each
pixel the strongest cell it covers; the mouse wheel zooms and a drag pans, and the part on
screen is computed again, exactly, down to one cell a pixel. The minimap in the corner
where the axes meet shows the whole head with a frame on the part shown: click or drag it
to go there. Another head or layer of the same text opens at the same place, so heads
compare at one position (the first token, a stretch of the diagonal). "go to token" jumps to a position (a number) or the next match of a token.
"log colour" colours by the logarithm of the weight: at thousands of tokens most weights
are near 1/T, and a linear scale shows only the strongest.</p>
<p>Right-click a cell (or Alt+click it) to ask <b>why</b> the query attends to the key: the Why panel
splits the score into the sources that wrote the query and the key.</p>""",
    "Head lines": """<h2>Head lines</h2>
<p>The same weights as lines, the way bertviz draws them: queries on the left, keys on the
right, one line per weight, its opacity the weight. Each head has its colour; turn heads on
and off with the numbered buttons. Hover a token to keep only its lines. For a sentence
pair, "A -> B" keeps the lines from the first sentence to the second.</p>
<p>A long text has far too many lines to draw: there each query gets lines to its few
strongest keys only (how many: "strongest ... keys a query"), with their exact weights, and
the line under the picture says how much of the weight the other keys take, not drawn.</p>""",
    "Rollout": f"""<h2>Rollout</h2>
<p>Attention rollout (Abnar and Zuidema, 2020): how much of each input token reaches each
position after a layer, following the attention of every layer before it (with the
residual connection counted as attention to oneself). Rows are positions, columns the input
tokens they draw from; rows sum to 1. "mean of heads" and "max of heads" show one layer
instead.</p>{KINDS}""",
    "Head statistics": f"""<h2>Head statistics</h2>
<p>One row per head, one column per measure, each a head's mean over the query rows i of the
shown text, with a_ij the weight query i gives key j (a column with nothing to measure, such as
[CLS] in a text without one, is hidden):</p>{_statistics_list()}
<p>The same list is the atlas's metrics (docs/atlas.md) and `attnscope heads --json`'s.
Induction and previous-token scores "(repeat)", where shown, come from a fixed random sequence
repeated twice. Click a column to sort; click a row to open the head everywhere.</p>""",
    "Neurons": """<h2>Neurons</h2>
<p>How one head turns a query and the keys into weights, for one query token: its query
vector q (one row), every key vector k (one row per key token), their elementwise product,
the dot products scaled (q.k / sqrt(d), plus the model's position bias or mask where it has
one), and the softmax of those: the row of the heatmap. Blue is negative, red positive,
centred at 0. For models with grouped-query attention, several query heads share one key
head: the line under the plots says which.</p>""",
    "Decoding": """<h2>Decoding</h2>
<p>The model writes its output one token per Step (right arrow): greedy takes the most
likely token, beam keeps the best few hypotheses, sampling draws from the distribution
(temperature, top-k, top-p). The bars are the candidates for the next token, the chosen one
in red. The alignment has one row per output token: what it looked at when it was chosen
(cross attention for a translator, the context for a decoder). The right map shows that row
for every head. Back and Step replay steps already made.</p>""",
    "Training": """<h2>Training</h2>
<p>Train a small translator or GPT here and watch it learn: the loss curves (training and
validation), and a time-lapse of every head's attention on a probe sentence, recorded as
training goes; drag the slider to see heads form. Stop ends after the current step and keeps
the model; Save writes the checkpoint and its time-lapse.</p>""",
    "Positions": """<h2>Positions</h2>
<p>Sinusoidal positional encodings as clocks: each pair of dimensions is a point turning on a
circle at its own frequency, so moving k positions is the same rotation R(k) whatever the
start: PE(pos + k) = R(k) PE(pos). The heatmap is the encoding table (rows positions, columns
dimensions), the curves show how similar two positions are as they move apart, and RoPE turns
the queries and keys themselves. For a model with learned positions, its own table is shown.</p>""",
    "Compare": """<h2>Compare</h2>
<p>The same head of two models on the same text: A, B, and their difference A - B, centred at
0, the range of its colours stated on its bar. The table lists every head's largest
difference, sortable. For a Hugging Face BERT, B is the same weights in attnscope's own
encoder: the differences are rounding (~1e-7).</p>""",
    "Interventions": """<h2>Interventions</h2>
<p>Change the model and watch what happens. <b>Switch head off</b> (or Shift/Ctrl-click a tile
in the heads overview) removes the selected head's output: its slice of the output
projection's input is zero. <b>Replace by its mean</b> puts the head's mean output over the
text's positions at every position. <b>Knock out</b> blocks attention from a query position to
a key position (or every one) in one layer or all (or Shift-click a cell of Head detail;
Ctrl-click blocks the key's column, Ctrl+Shift-click the query's row): that score becomes -inf and the row's
other weights renormalise (Geva et al., 2023). Every view runs again with the change, the
ablated tiles are framed and crossed, the Decoding panel steps the changed model and shows
each step's probabilities before and after, and the panel shows the next-token change at
the end of the text: p before and after, (p_new - p_base) / p_base, and the KL divergence.
<b>Value-weighted</b> shows alpha_ij ||f(x_j)|| instead of the weights (Kobayashi et al.,
2020): how far each key actually moves the head's output, each row as shares of its sum.</p>""",
    "Lens": """<h2>Lens</h2>
<p>The logit lens: for each decoder layer (rows) and position (columns), the token the
residual stream after that layer would predict, read through the model's own final norm and
unembedding (with Gemma's final softcap and tied embeddings where the model has them). The
colour is the probability it gives the token the last layer predicts there, so you can see
at which layer the model settles on its answer. Hover a cell for its top five.</p>""",
}
PAGES["Patching"] = """<h2>Patching</h2>
<p>Which heads and layers carry a behaviour. Type a <b>clean</b> text and a <b>corrupted</b> one of the
same number of tokens (say a repeated random sequence, and the same with its second half
changed), and two answers (offered: each run's likeliest next tokens, a leading space shown as
&#9251;; a picked answer stays picked while the texts change). <b>Exact patching</b> runs
the corrupted text once per cell with one activation of the clean run put back (a head's
output, at every position or one; the residual stream before a layer, or a layer's attention
or MLP output, at one position) and measures the logit difference of the answers at the last
position (or, with the <b>metric</b> box, the answer's log-probability); <i>noising</i> runs the
clean text with one corrupted activation instead. Heads switched off in Interventions stay off in
every run, and the status line says which.
<b>Attribution patching</b> estimates every cell from one backward (first order; where both ran,
their correlation is said). <b>Direct logit attribution</b> splits the clean logit difference into
each head's and MLP's share, coloured by the share itself (red toward the first answer, blue
away) with the total said above the map. The other methods' colours: (patched - corrupted) /
(clean - corrupted), 1 = the clean behaviour back, 0 = none, on a map centred at 0. Hover for the raw numbers; click a head to open
it in Head detail on the clean text. A result is marked stale once a text, an answer or the
model changes.</p>"""
PAGES["Why"] = """<h2>Why</h2>
<p>Why does this head's query attend to that key? In Head detail, right-click a cell and choose
<b>Why does query i attend to key j?</b> (or Alt+click the cell). A head's score is
scale &times; q<sub>i</sub> &middot; k<sub>j</sub>. With every normalisation's scale taken from this run
(<i>frozen</i>), the query and the key are linear in the residual stream, which is a sum of
<b>sources</b>: the token embedding (<code>embed</code>), learned positions (<code>pos</code>), each
earlier head's output (<code>L2.H1</code>; a cross-attention head <code>L1.X0</code>; an encoder's
heads, on the key side of cross-attention, <code>enc.L0.H2</code>), each MLP (<code>L0.mlp</code>) and
the constants (<code>bias</code>). So the score splits exactly into a table of (query-side source
&times; key-side source) terms that sums to the score.</p>
<p>The heatmap shows the strongest sources, query sides down and key sides across, each cell's
term written in it, red adding to the score and blue taking from it (centred at 0); the other
sources of each side are summed as &ldquo;other (N)&rdquo;, so the table still sums to the score. The
bars are each side's sources summed over the other side. Above: the score and the weight the
model computed, a position bias added apart from the table (T5, ALiBi), a soft cap applied after
it (Gemma 2: the table splits the score before the cap), and what was frozen.</p>
<p><b>Versus.</b> Softmax sees only differences between a row's scores, so &ldquo;why key j rather than
key j2?&rdquo; is often the better question: the versus key is the row's runner-up (its strongest
other key) unless you choose one; the table box shows this key's terms, the versus key's, or their
difference. <b>Head loadings</b> adds which sources drive this head over the whole text: the table
averaged over the head's cells, weighted by their attention (on a long text over a sample of
rows, with the share of their weight it covers).</p>
<p><b>Walk a circuit backwards:</b> a head's name, on the map's axes, on a bar or in the line of
strongest terms, opens that head in Head detail, where its own cells can be asked again. On the
bundled GPT with a text repeated twice, the induction head (layer 3, head 3) attends to the token
after the earlier copy; its largest key-side source is the previous-token head L2.H1.</p>
<p>The split runs in the model's worker (Stop ends it). It belongs to the text, the model and the
interventions it was computed for: once one changes it is marked stale and greyed; press
<b>Why again</b>. A recording opened without its model cannot be split: it holds queries and keys,
not the sources that wrote them.</p>"""
PAGES["Atlas"] = """<h2>Atlas</h2>
<p>What every head does across a corpus, not on one text. <b>File &gt; Build Atlas…</b> builds one from
the open model (a corpus file or folder, the bundled Shakespeare by default; tokens per document;
documents; top contexts kept): one recorded pass over the documents on the model thread, with
progress; <b>Stop</b> keeps what is done and <b>Build</b> with the same options resumes. The command
line does the same: <code>attnscope atlas MODEL --corpus PATH --out A.safetensors</code>.
<b>File &gt; Open Atlas…</b> (Ctrl+Shift+A) reads one; no model is needed to read it.</p>
<p>The <b>scatter</b> has one point per head: choose any metric for x, for y and for the colour
(entropy, mean distance, sink, previous-token, self, local-window, duplicate-token and induction
mass, and the head's output norm). Hover a point to name its head. <b>Find heads</b>: ranges of the x
and y metrics (any: no bound); the heads inside are drawn strong, the others dimmed, and listed.
Click a head (in the scatter or the list) to see its metrics' histograms, its most similar heads
(links), its top contexts (the query in [brackets], its strongest keys in &lt;angles&gt;), samples
from each decile of its activation, and its queries and keys projected together by PCA (with the
share of variance the projection keeps).</p>
<p><b>A context is a door</b>: click it and its document goes in the text box and is Run, and Head
detail opens at that head with the context's query row framed (right-click a cell there: Why). An
atlas of another model than the one open says so and runs nothing. Every definition is in
docs/atlas.md.</p>"""
PAGES["Kinds of attention"] = f"<h2>Kinds of attention</h2>{KINDS}{MAPS}"


class HelpDialog(QDialog):
    """The pages, a list on the left; non-modal, so the window stays usable beside it."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("What am I looking at")
        self.resize(760, 520)
        self.pages = QListWidget()
        self.pages.addItems(list(PAGES))
        self.pages.setMaximumWidth(180)
        self.text = QTextBrowser()
        self.pages.currentTextChanged.connect(lambda title: self.text.setHtml(PAGES.get(title, "")))
        layout = QHBoxLayout(self)
        layout.addWidget(self.pages)
        layout.addWidget(self.text, 1)
        self.show_page("Heads overview")

    def show_page(self, title: str) -> None:
        items = self.pages.findItems(title, Qt.MatchFlag.MatchExactly)
        if items:
            self.pages.setCurrentItem(items[0])


class HelpButton(QToolButton):
    """A small "?" in the top right corner of a view that opens its help page."""

    def __init__(self, view: QWidget, title: str, open_page):
        super().__init__(view)
        self.setText("?")
        self.setToolTip(f"What am I looking at: help for {title}")
        self.setAutoRaise(True)
        self.clicked.connect(lambda: open_page(title))
        self._follower = _Corner(self)
        view.installEventFilter(self._follower)
        self._follower.place()
        self.raise_()


class _Corner(QObject):
    def __init__(self, button: HelpButton):
        super().__init__(button)
        self.button = button

    def place(self) -> None:
        view = self.button.parentWidget()
        self.button.move(view.width() - self.button.sizeHint().width() - 2, 0)

    def eventFilter(self, obj, event) -> bool:
        if event.type() == QEvent.Type.Resize:
            self.place()
        return False
