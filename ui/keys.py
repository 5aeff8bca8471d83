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

# Tokenize
TOK_TEXT = "tok.text"
TOK_WORD = "tok.word"  # the pre-token traced in "Why this split"
TOK_WORD_DEFAULT = "tok.word_default"  # the word a fresh session would trace (links omit it)
TOK_SHOW_IDS = "tok.show_ids"
TOK_GPT2_VIEW = "tok.gpt2_view"
TOK_ADD_SPECIAL = "tok.add_special"  # add the model's BOS/EOS template

# Decode
DEC_IDS = "dec.ids"
DEC_IDS_DEFAULT = "dec.ids_default"  # the IDs a fresh session shows (links omit them)

# Vocabulary
VOC_SEARCH = "voc.search"
VOC_ORDER = "voc.order"
VOC_TOKEN = "voc.token"  # the selected token ID
VOC_TOKEN_DEFAULT = "voc.token_default"
VOC_PICKED = "voc.picked"  # the row picked in the table (a new pick moves VOC_TOKEN)

# Compare
CMP_TOKENIZERS = "cmp.tokenizers"
CMP_TEXT = "cmp.text"

# Train (its form values, then the job)
TRAIN_SOURCE = "train.source"
TRAIN_VOCAB_SIZE = "train.vocab_size"
TRAIN_SPECIALS = "train.specials"
TRAIN_PATTERN = "train.pattern"
TRAIN_SPEED = "train.speed"
TRAIN_JOB = "train.job"  # this session's current job ID (its only link to the manager)
TRAIN_DONE = "train.done"  # job ID -> registered tokenizer label (so each job registers once)
TRAIN_TOAST = "train.toast"  # a label to announce on the next run

# links
LINKS_SEEN = "links.seen"  # page -> hash of the query string last applied or written
LINKS_NOTES = "links.notes"  # page -> notes about the URL, shown once by share()
LINKS_TEXT_IDS = "links.text_ids"  # sha256(text) -> stored text ID (this session's long texts)
