extension StringProtocol {
    /// Without leading and trailing white space (Foundation's `trimmingCharacters(in:)`
    /// showed in the profile of every request).
    func trimmingWhitespace() -> String {
        var slice = self[...]
        while slice.first?.isWhitespace == true { slice.removeFirst() }
        while slice.last?.isWhitespace == true { slice.removeLast() }
        return String(slice)
    }
}
