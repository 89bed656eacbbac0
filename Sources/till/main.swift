print("till")
