def parse(text):
    return int(text)

parse("forty-two")
