raise ImportError("a json that is not the standard library")
