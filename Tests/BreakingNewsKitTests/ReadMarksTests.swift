import BreakingNewsKit
import PropertyBased
import Testing

/// Read marks as ranges behave as a set of positions, whatever is inserted and removed.
@Suite struct ReadMarksTests {
    @Test func marksAgreeWithASet() async {
        let operations = Gen.int(in: 0...9_999).array(of: 1...80)
        await propertyCheck(count: 300, input: operations) { operations in
            var marks = ReadMarks()
            var model = Set<Int>()
            for operation in operations {
                let position = operation % 40 + 1
                switch operation % 3 {
                case 0:
                    marks.remove(position)
                    model.remove(position)
                case 1:
                    marks.insert(position)
                    model.insert(position)
                default:
                    let upper = position + operation % 5
                    marks.insert(position...upper)
                    model.formUnion(position...upper)
                }
            }
            #expect((0...50).filter(marks.contains) == model.sorted())
            #expect(marks.count == model.count)
            // Ranges are ascending, and neither overlap nor touch: one set, one form.
            for (a, b) in zip(marks.ranges, marks.ranges.dropFirst()) { #expect(a.upperBound + 1 < b.lowerBound) }
            #expect(ReadMarks(model.map { $0...$0 }) == marks)
        }
    }

    @Test func aWholeLogReadIsOneRange() {
        var marks = ReadMarks((1...10_000).reversed().map { $0...$0 })
        #expect(marks.ranges == [1...10_000])
        marks.remove(5_000)
        #expect(marks.ranges == [1...4_999, 5_001...10_000])
        marks.formUnion(ReadMarks([5_000...5_000]))
        #expect(marks.ranges == [1...10_000])
    }

    /// Any Int is a position to the type (files are limited elsewhere): the ends of Int
    /// neither trap nor wrap around.
    @Test func theEndsOfIntNeitherTrapNorWrap() {
        var marks = ReadMarks([Int.min...Int.min, (Int.max - 1)...Int.max])
        #expect(marks.ranges == [Int.min...Int.min, (Int.max - 1)...Int.max], "the ends do not touch each other")
        marks.insert(Int.max)
        marks.insert(Int.min + 1)
        #expect(marks.ranges == [Int.min...(Int.min + 1), (Int.max - 1)...Int.max])
        #expect(marks.contains(Int.min) && marks.contains(Int.max) && !marks.contains(0))
        #expect(ReadMarks([Int.min...Int.max]).count == .max)
        marks.remove(Int.max)
        marks.remove(Int.min)
        #expect(marks.ranges == [(Int.min + 1)...(Int.min + 1), (Int.max - 1)...(Int.max - 1)])
    }
}
