"""BM25 search: analysis, ranking, top-50 cut, ties, caching on disk."""

from __future__ import annotations

from evolver_gym.webshop.search import LUCENE_STOPWORDS, SearchEngine, analyze, document_text


def product(asin, title, options=None, bullets=("first bullet",), description="plain text"):
    return {
        "asin": asin,
        "Title": title,
        "Description": description,
        "BulletPoints": list(bullets),
        "options": options or {},
    }


def test_analyzer_is_lucene_like():
    assert len(LUCENE_STOPWORDS) == 33
    assert analyze("The Shoes ARE for Running, and the beaches!") == ["shoe", "run", "beach"]
    assert analyze("women's 3.4 fl oz") == ["women", "3.4", "fl", "oz"]
    assert analyze("the and of") == []


def test_document_text_matches_upstream():
    p = product("B000000001", "Red Shoe", {"color": ["red", "blue"], "size": ["8", "9"]}, ["Comfy", "Second"])
    assert document_text(p) == "red shoe plain text comfy color: red, blue, and size: 8, 9"


def test_ranking_top_k_and_ties_in_catalog_order():
    products = [product(f"B{i:09d}", "blue running shoe") for i in range(60)]
    products.append(product("B999999999", "blue running shoe running shoe trail"))
    products.append(product("B888888888", "garden hose"))
    engine = SearchEngine(products)
    hits = engine.search("running shoe")
    assert len(hits) == 50
    assert hits[0] == "B999999999"  # most term hits first
    assert hits[1:] == [f"B{i:09d}" for i in range(49)]  # equal scores keep catalog order
    assert engine.search("hose") == ["B888888888"]
    assert engine.search("the of and") == [] and engine.search("zzzunknown") == []
    assert engine.search("<q> nothing") == []


def test_index_is_saved_and_reloaded(tmp_path):
    products = [product(f"B{i:09d}", f"item number {i} lamp") for i in range(30)]
    first = SearchEngine(products, index_dir=tmp_path)
    saved = list(tmp_path.iterdir())
    assert len(saved) == 1 and saved[0].name.endswith(first.fingerprint)
    second = SearchEngine(products, index_dir=tmp_path)
    assert second.search("lamp 7") == first.search("lamp 7") and second.search("lamp 7")[0] == "B000000007"


def test_single_letter_terms_and_unknown_ids_are_safe():
    assert analyze("matte finish and s") == ["matt", "finish", "s"]  # Porter would stem "s" to ""
    engine = SearchEngine([product("B000000001", "brush set"), product("B000000002", "plan s")])
    assert engine.search("brush s") == ["B000000001", "B000000002"]  # equal scores: catalog order
    assert engine.search("") == [] and engine.search("\u0000 \u202e") == []
