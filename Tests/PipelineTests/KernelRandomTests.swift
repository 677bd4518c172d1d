import AttributionModel
import Testing

/// The services' CSPRNG reads its draws in blocks: past a block's end it must read a fresh one, never
/// hand out a draw twice or an unfilled one.
@Suite("Kernel random") struct KernelRandomTests {
    @Test func drawsAcrossManyBlocksAreAllDistinctAndFilled() {
        var generator = KernelRandom()
        let draws = (0..<1_000).map { _ in generator.next() }
        #expect(Set(draws).count == draws.count, "no draw repeats (64-bit: a repeat means a reused block)")
        #expect(!draws.contains(0))
        var other = KernelRandom()
        #expect(Set((0..<100).map { _ in other.next() }).isDisjoint(with: draws), "another instance reads its own")
    }
}
