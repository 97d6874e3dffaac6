#include "snapshot.hpp"

#include <stdexcept>

namespace gpupool {

int32_t Snapshot::add_node(std::string name, uint32_t gpus) {
    nodes.push_back(SnapNode{std::move(name), gpus});
    return static_cast<int32_t>(nodes.size() - 1);
}

void Snapshot::add_partition(std::string name, std::vector<int32_t> node_index) {
    for (int32_t i : node_index)
        if (i < 0 || static_cast<size_t>(i) >= nodes.size())
            throw std::invalid_argument("partition " + name + ": node index " +
                                        std::to_string(i) + " out of range");
    partitions.push_back(SnapPartition{std::move(name), std::move(node_index)});
}

std::vector<std::string> split_list(const std::string &text) {
    std::vector<std::string> out;
    for_each_listed(text, [&](std::string_view item) { out.emplace_back(item); });
    return out;
}

}  // namespace gpupool
