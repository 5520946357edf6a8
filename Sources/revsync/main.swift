print("revsync")
