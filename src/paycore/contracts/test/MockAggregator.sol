// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @title A Chainlink AggregatorV3Interface look-alike for test chains only.
/// @notice Lets the Chainlink price source be tested against a real EVM: anyone may set the
///         answer and its timestamps, so a test can make the feed fresh, stale, negative or
///         incomplete (answeredInRound behind roundId) on demand.
contract MockAggregator {
    uint8 public immutable decimals;
    string public description;
    uint256 public constant version = 4;

    uint80 private _roundId;
    int256 private _answer;
    uint256 private _startedAt;
    uint256 private _updatedAt;
    uint80 private _answeredInRound;

    event AnswerUpdated(int256 indexed current, uint256 indexed roundId, uint256 updatedAt);

    constructor(uint8 decimals_, string memory description_) {
        decimals = decimals_;
        description = description_;
    }

    /// @notice A new round with `answer`, updated now.
    function setAnswer(int256 answer) external {
        setRound(_roundId + 1, answer, block.timestamp, block.timestamp, _roundId + 1);
    }

    /// @notice Every field of the latest round, exactly as given.
    function setRound(
        uint80 roundId,
        int256 answer,
        uint256 startedAt,
        uint256 updatedAt,
        uint80 answeredInRound
    ) public {
        _roundId = roundId;
        _answer = answer;
        _startedAt = startedAt;
        _updatedAt = updatedAt;
        _answeredInRound = answeredInRound;
        emit AnswerUpdated(answer, roundId, updatedAt);
    }

    function latestRoundData()
        external
        view
        returns (
            uint80 roundId,
            int256 answer,
            uint256 startedAt,
            uint256 updatedAt,
            uint80 answeredInRound
        )
    {
        return (_roundId, _answer, _startedAt, _updatedAt, _answeredInRound);
    }

    function latestAnswer() external view returns (int256) {
        return _answer;
    }
}
