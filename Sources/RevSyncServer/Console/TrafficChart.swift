import RevSyncEngine

/// The overview's chart of the last hour as an SVG drawn by the server: syncs per minute as
/// bars, commits and refusals as lines over them, on one scale. Only numbers go into it.
struct TrafficChart {
    let minutes: [TrafficMinute]

    func svg() -> String {
        let width = 720.0
        let height = 160.0
        let top = 10.0
        let bottom = 22.0
        let plot = height - top - bottom
        let peak = max(1, minutes.map { max($0.syncs, $0.commits, $0.refusals) }.max() ?? 1)
        let step = width / Double(max(1, minutes.count))
        func y(_ value: Int) -> Double { top + plot - plot * Double(value) / Double(peak) }
        var svg =
            ##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \##(Int(width)) \##(Int(height))" role="img" aria-label="syncs, commits and refusals per minute over the last hour">"##
        svg += ##"<line x1="0" y1="\##(top + plot)" x2="\##(width)" y2="\##(top + plot)" stroke="#d9dee5"/>"##
        svg += ##"<text x="4" y="\##(top + 10)" font-size="11" fill="#5f6b7a">\##(peak)/min</text>"##
        for (index, minute) in minutes.enumerated() where minute.syncs > 0 {
            let x = Double(index) * step
            svg +=
                ##"<rect x="\##(format(x + 1))" y="\##(format(y(minute.syncs)))" width="\##(format(max(1, step - 2)))" height="\##(format(top + plot - y(minute.syncs)))" fill="#8fb8f0"/>"##
        }
        for (values, colour) in [(minutes.map(\.commits), "#1a7f37"), (minutes.map(\.refusals), "#cf222e")]
        where values.contains(where: { $0 > 0 }) {
            let points = values.enumerated().map { "\(format(Double($0.offset) * step + step / 2)),\(format(y($0.element)))" }
            svg += ##"<polyline fill="none" stroke="\##(colour)" stroke-width="2" points="\##(points.joined(separator: " "))"/>"##
        }
        svg += ##"<text x="0" y="\##(height - 6)" font-size="11" fill="#5f6b7a">60 min ago</text>"##
        svg += ##"<text x="\##(width)" y="\##(height - 6)" font-size="11" fill="#5f6b7a" text-anchor="end">now</text>"##
        return svg + "</svg>"
    }

    private func format(_ value: Double) -> String {
        String((value * 10).rounded() / 10)
    }
}
