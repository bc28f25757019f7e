def run():
    return {"count": "three"}
