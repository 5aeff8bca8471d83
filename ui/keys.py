"""Names of the values kept in ``st.session_state``, one constant each.

Every per-user value lives in the session (never in module globals, which all users of the
server share). A prefix says which page owns it: ``ui.`` shared, ``tok.`` Tokenize, ``dec.``
Decode, ``voc.`` Vocabulary, ``cmp.`` Compare, ``train.`` Train, ``links.`` the link code.
Widgets bound with :func:`ui.state.bind` keep their own state under ``"_w." + key``. Keys
of widgets that live only for one run (buttons, charts) are written where the widget is.
"""

# shared by every page
TOKENIZERS = "ui.tokenizers"  # label -> {"tok", "source", "fingerprint", "meta"}
ACTIVE = "ui.active"  # the active tokenizer's label (the default in every picker)
SAVED = "ui.saved"  # fingerprint -> library ID, for session tokenizers this session saved
HUB_MODELS = "ui.hub_models"  # Hub model IDs this session opened by name or link (ui.hub_models)
HUB_PROBLEM = "ui.hub_problem"  # why the last model ID typed was refused, shown once

# Tokenize
TOK_TEXT = "tok.text"
TOK_WORD = "tok.word"  # the pre-token traced in "Why this split"
TOK_WORD_DEFAULT = "tok.word_default"  # the word a fresh session would trace (links omit it)
TOK_SHOW_IDS = "tok.show_ids"
TOK_GPT2_VIEW = "tok.gpt2_view"
TOK_ADD_SPECIAL = "tok.add_special"  # add the model's BOS/EOS template
TOK_TAB = "tok.tab"  # the open tab (lazy tabs: only it is built); a link's word= opens "why"
TOK_TABS = ("✂️ Pre-tokens", "🔍 Why this split", "⬇️ Export")
TOK_MODE = "tok.mode"  # "Text" or "Chat" (ui.chat)
TOK_CHAT = "tok.chat"  # the conversation: [[role, content], ...] (ui.chat_view)
TOK_CHAT_GEN = "tok.chat_gen"  # add the generation prompt
TOK_CHAT_TEMPLATE = "tok.chat_template"  # the chosen template's name ("" = the model's default)

# Decode
DEC_IDS = "dec.ids"
DEC_IDS_DEFAULT = "dec.ids_default"  # the IDs a fresh session shows (links omit them)

# Vocabulary
VOC_SEARCH = "voc.search"
VOC_ORDER = "voc.order"
VOC_TOKEN = "voc.token"  # the selected token ID
VOC_TOKEN_DEFAULT = "voc.token_default"
VOC_PAGE = "voc.page"  # the page of the token list shown
VOC_PAGE_OF = "voc.page_of"  # the list (tokenizer, search, order) that page is of

# Compare
CMP_TOKENIZERS = "cmp.tokenizers"
CMP_TEXT = "cmp.text"

# Replay
REP_TEXT = "rep.text"
REP_STEP = "rep.step"  # the step k shown (merges done); a link may name one past the end
REP_PLAYING = "rep.playing"  # True while the play button advances the step
REP_SPEED = "rep.speed"  # a label of ui.replay.SPEEDS
REP_STRIDE = "rep.stride"  # a label of ui.replay.STEP_BY

# Evaluate
EVA_TOKENIZERS = "eva.tokenizers"
EVA_SOURCES = "eva.sources"  # picked text source IDs (ui.evaluate: typed, builtin, lang:xx, file:...)
EVA_TEXT = "eva.text"  # the typed text
EVA_FILES = "eva.files"  # source ID -> the uploaded text kept for this session
EVA_FOCUS = "eva.focus"  # "i.j": the token tables show tokenizer i on text j (of the picks)
EVA_SEEN_UPLOADS = "eva.seen_uploads"  # uploader file ID -> its source ID (None: refused)

# Train (its form values, then the job)
TRAIN_SOURCE = "train.source"
TRAIN_VOCAB_SIZE = "train.vocab_size"
TRAIN_SPECIALS = "train.specials"
TRAIN_PATTERN = "train.pattern"
TRAIN_SPEED = "train.speed"
TRAIN_JOB = "train.job"  # this session's current job ID (its only link to the manager)
TRAIN_SHOWN = "train.shown"  # (job ID, merge count) the Train page showed last: Pause and Stop hold it
TRAIN_DONE = "train.done"  # job ID -> registered tokenizer label (so each job registers once)
TRAIN_TOAST = "train.toast"  # a label to announce on the next run
TRAIN_RECORD = "train.record"  # the last finished training, as kept in the workspace
TRAIN_CORPUS = "train.corpus"  # the uploaded corpus, kept until replaced: {"name", "texts", ...}
TRAIN_SERVER_CORPUS = "train.server_corpus"  # the name of the server corpus picked (ui.corpus_dirs)
TRAIN_HF_DATASET = "train.hf_dataset"  # the Hugging Face dataset typed: hf://datasets/... or ORG/NAME
TRAIN_HF_FILE = "train.hf_file"  # the file in it, with ORG/NAME
TRAIN_TEXT_COLUMN = "train.text_column"  # the column of a Parquet corpus that holds the text

# workspace (ui.workspace): this session's work kept on the server, named by ?ws= in the URL
WS_ID = "ws.id"  # the ID of this session's newest snapshot
WS_DIGEST = "ws.digest"  # hash of the manifest last written or opened (skip needless writes)
WS_SALT = "ws.salt"  # random, per session: snapshot IDs cannot be guessed from their content
WS_SEEN = "ws.seen"  # snapshot IDs this session has opened (each opened once)
WS_RECIPES = "ws.recipes"  # tokenizer label -> how to rebuild it (blob IDs)
WS_PROBLEM = "ws.problem"  # why work cannot be kept (the store failed), shown once

# links
LINKS_SEEN = "links.seen"  # page -> hash of the query string last applied or written
LINKS_WRITTEN = "links.written"  # page -> hashes of the last query strings written
LINKS_NOTES = "links.notes"  # page -> notes about the URL, shown once by share()
LINKS_TEXT_IDS = "links.text_ids"  # sha256(text) -> stored text ID (this session's long texts)
