"""Tokenizer Playground: placeholder home page until the app lands."""

import streamlit as st

st.set_page_config(page_title="Tokenizer Playground", page_icon="🧩")
st.title("Tokenizer Playground")
st.write("Train a byte-level BPE tokenizer and watch it work.")
